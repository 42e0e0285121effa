// The device interface kern-load runs plans on (SPEC §6, §10): the cpu
// reference device (cpu_device.h) and the cuda device (kern-load/cuda/,
// driver API loaded with dlopen) implement it. Deliberately small: memory,
// copies, kernel resolution, one launch, synchronize. Everything
// plan-specific (sizes, argument staging, symbol checks) lives in Executable.
//
// Threading: a Device is used from one thread at a time.
// Ordering: launches and copies execute in issue order; copy_to_host returns
// after the copy and all previously issued launches completed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "kern-load/graph_policy.h"
#include "kern-load/plan_file.h"

namespace kern::load {

/// A device address (CUdeviceptr on cuda, a host address on cpu); 0 = null.
using DevicePtr = uint64_t;

/// Launch geometry of one step (cuLaunchKernel's gridDim/blockDim/sharedMemBytes).
struct LaunchDims {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_mem_bytes = 0;  ///< dynamic shared memory in bytes
};

/// One execution device. Implementations report failures as Error values of
/// kind kDevice (driver calls: name the call and the CUDA error string) or
/// kKernel (kernel resolution: name the step symbol).
class Device {
 public:
  virtual ~Device() = default;

  /// Short human name for logs and kern-run's report ("cpu", "cuda:0 NVIDIA H200").
  virtual std::string name() const = 0;

  /// Allocates `size_bytes` (> 0) of device memory aligned to `align_bytes`
  /// (a power of two >= 256), zero-filled. cuda: cuMemAlloc + cuMemsetD8.
  virtual Result<DevicePtr> allocate(uint64_t size_bytes, uint64_t align_bytes) = 0;
  /// Frees memory returned by allocate (cuMemFree). Freeing 0 is a no-op.
  virtual Status free(DevicePtr ptr) = 0;
  /// Names an allocation returned by allocate ("buffer 'x'") for the
  /// device's own diagnostics; the cpu device names it in extent errors.
  /// Default: ignored.
  virtual void name_allocation(DevicePtr /*ptr*/, const std::string& /*name*/) {}

  /// Copies `size_bytes` from host memory `src` to device address `dst`
  /// (cuMemcpyHtoD, through pinned staging on cuda).
  virtual Status copy_to_device(DevicePtr dst, const void* src, uint64_t size_bytes) = 0;
  /// Copies `size_bytes` from device address `src` to host memory `dst`
  /// after all previously issued launches completed (cuMemcpyDtoH).
  virtual Status copy_to_host(void* dst, DevicePtr src, uint64_t size_bytes) = 0;

  /// Resolves every step of `plan` (Plan.steps, by index) to something
  /// launch() can run. cpu: each step symbol (or `extern:` op) through the
  /// reference kernel registry; a symbol without one is an error naming it.
  /// cuda: loads the cubins under `kernels_dir`, checks pinned sha256s and
  /// param ABIs (SPEC §6). `plan` outlives the device's use of it.
  virtual Status load_kernels(const PlanFile& plan, const std::string& kernels_dir) = 0;

  /// Launches step `step` (an index into Plan.steps, resolved by
  /// load_kernels) with `kernel_params`: one pointer per step param, each
  /// pointing at the value (the cuLaunchKernel kernelParams layout,
  /// docs/kernels.md). The pointed-to values may be overwritten once launch
  /// returns. cpu: runs the kernel to completion; cuda: enqueues it.
  virtual Status launch(uint32_t step, const LaunchDims& dims, void** kernel_params) = 0;

  /// Waits for all issued work (cuStreamSynchronize).
  virtual Status synchronize() = 0;

  // Graphs (SPEC §6): optional; the cpu device has none and Executable then
  // always launches eagerly. While capturing, launch() records instead of
  // running; nothing else (copies, allocation) may be issued.

  /// Whether begin_capture / end_capture / launch_graph are supported.
  virtual bool supports_graphs() const { return false; }
  /// Starts recording launches (cuda: cuStreamBeginCapture, thread-local mode).
  virtual Status begin_capture() { return make_error(ErrorKind::kDevice, name() + " has no graphs"); }
  /// Stops recording and instantiates the graph (cuStreamEndCapture +
  /// cuGraphInstantiate). After an error the device is out of capture mode.
  virtual Result<GraphHandle> end_capture() { return make_error(ErrorKind::kDevice, name() + " has no graphs"); }
  /// Ends a capture whose launches failed, discarding it; never fails.
  virtual void abort_capture() {}
  /// Enqueues a graph returned by end_capture (cuGraphLaunch).
  virtual Status launch_graph(GraphHandle /*graph*/) {
    return make_error(ErrorKind::kDevice, name() + " has no graphs");
  }
  /// Destroys a graph returned by end_capture (after pending work); 0 is a no-op.
  virtual void destroy_graph(GraphHandle /*graph*/) {}
};

/// Options of the cuda device.
struct CudaDeviceOptions {
  int ordinal = 0;  ///< CUDA device ordinal
};

/// Creates the cuda device. Defined by kern-load/cuda/ when that backend is
/// built; otherwise by kern-load/cuda_device_missing.cpp, which returns an
/// error (kind kDevice) saying the cuda device is not built.
Result<std::unique_ptr<Device>> make_cuda_device(const CudaDeviceOptions& options);

}  // namespace kern::load
