// A minimal CUDA session for the kernel comparison harness (test/gpu/run.sh):
// the driver loaded with dlopen (kern-load/cuda/cuda_driver.h), the primary
// context of device 0, one non-blocking stream, device buffers, fatbins
// loaded with cuModuleLoadData, launches and event timing. Test code: every
// failure is returned as an Error value naming the call.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-load/cuda/cuda_driver.h"

namespace kern::gpu_test {

/// One open CUDA session; releases everything it created on destruction.
class GpuSession {
 public:
  /// Loads the driver, retains device `ordinal`'s primary context, creates a
  /// non-blocking stream. Errors: kDevice (no driver / no device).
  static Result<std::unique_ptr<GpuSession>> open(int ordinal = 0);
  ~GpuSession();

  /// "NVIDIA H200 (sm_90, driver 13000)".
  const std::string& description() const { return description_; }
  const load::cuda::Driver& driver() const { return *driver_; }
  CUstream stream() const { return stream_; }

  /// Device allocation of `size_bytes` (freed with the session).
  Result<CUdeviceptr> alloc(uint64_t size_bytes);
  /// Synchronous copies on the session stream.
  Status upload(CUdeviceptr dst, const void* src, uint64_t size_bytes);
  Status download(void* dst, CUdeviceptr src, uint64_t size_bytes);

  /// The function `symbol` of the fatbin at `path` (modules cached by path).
  Result<CUfunction> function(const std::string& path, const std::string& symbol);

  /// cuLaunchKernel on the session stream with `shared_mem` bytes of dynamic
  /// shared memory (no synchronisation).
  Status launch(CUfunction f, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_mem, void** params);
  Status synchronize();

  /// Milliseconds between two points of the stream: times `body` (which
  /// enqueues work) with events; synchronises.
  template <typename F>
  Result<float> time_ms(F&& body);

 private:
  GpuSession() = default;
  std::unique_ptr<load::cuda::Driver> driver_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;  ///< retained primary context (released in the destructor)
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr, stop_ = nullptr;
  std::vector<CUdeviceptr> allocations_;
  std::map<std::string, CUmodule> modules_;
  std::string description_;
};

template <typename F>
Result<float> GpuSession::time_ms(F&& body) {
  const auto& a = driver_->api();
  KERN_CU_CHECK(*driver_, a.cuEventRecord(start_, stream_));
  KERN_RETURN_IF_ERROR(body());
  KERN_CU_CHECK(*driver_, a.cuEventRecord(stop_, stream_));
  KERN_CU_CHECK(*driver_, a.cuEventSynchronize(stop_));
  float ms = 0.0f;
  KERN_CU_CHECK(*driver_, a.cuEventElapsedTime(&ms, start_, stop_));
  return ms;
}

}  // namespace kern::gpu_test
