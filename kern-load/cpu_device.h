// The cpu reference device (SPEC §10): device memory is host memory, each
// plan step is resolved at load time to a C++ reference kernel
// (kernels-src/cpu) by its symbol or `extern:` op, and a launch calls it
// synchronously with the cuLaunchKernel-style kernelParams. It is how the
// whole pipeline is tested without a GPU, and the numeric reference for the
// CUDA kernels. Trust boundary: a reference kernel is trusted to stay within
// the bounds its scalar params describe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kern-load/device.h"
#include "kernels-src/cpu/cpu_kernel.h"

namespace kern::load {

/// Maps a step symbol (or "extern:<op>") to a reference kernel; nullptr = none.
using CpuKernelResolver = std::function<cpu::CpuKernelFn(std::string_view symbol)>;

/// Host-memory device running reference kernels.
class CpuDevice final : public Device {
 public:
  /// `resolver` looks up kernels at load_kernels (tests pass fakes;
  /// make_cpu_device passes kern::cpu::find_cpu_kernel).
  explicit CpuDevice(CpuKernelResolver resolver);
  ~CpuDevice() override;

  std::string name() const override { return "cpu"; }
  Result<DevicePtr> allocate(uint64_t size_bytes, uint64_t align_bytes) override;
  Status free(DevicePtr ptr) override;
  Status copy_to_device(DevicePtr dst, const void* src, uint64_t size_bytes) override;
  Status copy_to_host(void* dst, DevicePtr src, uint64_t size_bytes) override;
  /// Resolves every step; a symbol with no reference kernel is an error
  /// (kind kKernel) naming it and the step. `kernels_dir` is unused.
  Status load_kernels(const PlanFile& plan, const std::string& kernels_dir) override;
  /// Calls the step's reference kernel and returns its Status unchanged
  /// (Executable adds program/dispatch/step context).
  Status launch(uint32_t step, const LaunchDims& dims, void** kernel_params) override;
  Status synchronize() override { return {}; }

 private:
  CpuKernelResolver resolver_;
  std::vector<cpu::CpuKernelFn> kernels_;  ///< by step index, set by load_kernels
  std::vector<uint32_t> num_params_;       ///< by step index
  std::vector<void*> allocations_;         ///< owned; freed in the destructor if still live
};

/// A CpuDevice resolving through kern::cpu::find_cpu_kernel (kernels-src/cpu).
std::unique_ptr<Device> make_cpu_device();

}  // namespace kern::load
