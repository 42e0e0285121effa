// The cpu reference device (SPEC §10): device memory is host memory, each
// plan step is resolved at load time to a C++ reference kernel
// (kernels-src/cpu) by its symbol or `extern:` op, and a launch calls it
// synchronously with the cuLaunchKernel-style kernelParams. It is how the
// whole pipeline is tested without a GPU, and the numeric reference for the
// CUDA kernels. Memory safety: before each launch the device asks the
// kernel's extent declaration (cpu_kernel.h) what it may touch through each
// pointer param and checks that against the allocation the pointer lies in;
// a violation is an error naming the kernel, the param and the buffer
// (Executable adds the program and dispatch), and the kernel is not run.
// The kernel then only has to stay within its own declaration.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kern-load/device.h"
#include "kernels-src/cpu/cpu_kernel.h"
#include "kernels-src/cpu/gemv_packed.h"

namespace kern::load {

/// Maps a step symbol (or "extern:<op>") to a reference kernel; nullptr = none.
using CpuKernelResolver = std::function<const cpu::CpuKernel*(std::string_view symbol)>;

/// Host-memory device running reference kernels.
class CpuDevice final : public Device {
 public:
  /// `resolver` looks up kernels at load_kernels (tests pass fakes;
  /// make_cpu_device passes kern::cpu::find_cpu_kernel).
  explicit CpuDevice(CpuKernelResolver resolver);
  ~CpuDevice() override;

  std::string name() const override { return "cpu"; }
  /// Anonymous mmap: zero pages that take memory only once written.
  Result<DevicePtr> allocate(uint64_t size_bytes, uint64_t align_bytes) override;
  Status free(DevicePtr ptr) override;
  Status copy_to_device(DevicePtr dst, const void* src, uint64_t size_bytes) override;
  Status copy_to_host(void* dst, DevicePtr src, uint64_t size_bytes) override;
  /// `host` itself when it is aligned to `align_bytes` (device memory is
  /// host memory); recorded like an allocation (extent checks see it) but
  /// never freed by the device.
  std::optional<DevicePtr> host_view(const void* host, uint64_t size_bytes, uint64_t align_bytes) override;
  /// memset.
  Status fill_bytes(DevicePtr dst, uint8_t value, uint64_t size_bytes) override;
  /// Resolves every step; a symbol with no reference kernel is an error
  /// (kind kKernel) naming it and the step. `kernels_dir` is unused.
  Status load_kernels(const PlanFile& plan, const std::string& kernels_dir) override;
  /// Checks the step's declared extents against the allocations its
  /// pointer params point into (kind kManifest: the plan wired a launch
  /// that would touch memory outside its buffer), then calls the reference
  /// kernel and returns its Status unchanged (Executable adds
  /// program/dispatch/step context).
  Status launch(uint32_t step, const LaunchDims& dims, void** kernel_params) override;
  /// launch(), each pointer bounded by the end of its region (when given)
  /// instead of its allocation's: errors name the region ("scratch 'tmp'").
  Status launch_in_regions(uint32_t step, const LaunchDims& dims, void** kernel_params,
                           const ParamRegion* regions) override;
  /// Packs the w of every staged decode GEMV launch (kern_gemv_*) whose w,
  /// n, k and splits are fixed at staging and whose w lies in one of
  /// `weights`, once per (w, k, splits), into the lane order the GEMV reads
  /// (gemv_packed.h; the launches then read the packed copy: same bits, less
  /// vector work per weight byte). Returns the packed bytes. Errors: kDevice
  /// when the memory for a copy cannot be mapped.
  Result<uint64_t> prepare_weights(const std::vector<StagedProgram>& programs,
                                   std::span<const WeightRange> weights) override;
  /// Names an allocation for launch errors ("buffer 'x'").
  void name_allocation(DevicePtr ptr, const std::string& name) override;
  Status synchronize() override { return {}; }
  /// Keeps `collective` for the collective extern ops (CpuLaunch::collective).
  Status attach_collective(std::unique_ptr<cpu::Collective> collective) override {
    collective_ = std::move(collective);
    return {};
  }
  std::optional<cpu::CollectiveStats> collective_stats() const override {
    if (!collective_) return std::nullopt;
    return collective_->stats();
  }
  cpu::Collective* collective() override { return collective_.get(); }

 private:
  /// One live allocation: [start, start + size_bytes).
  struct Allocation {
    uintptr_t start = 0;
    uint64_t size_bytes = 0;
    std::string name;  ///< from name_allocation; empty until named
    void* map_base = nullptr;  ///< the mmap to unmap; null for a host_view (not owned)
    size_t map_length = 0;
  };
  /// Records `a`, keeping allocations_ sorted by start.
  void record(Allocation a);
  /// The allocation holding address `p`, or nullptr.
  const Allocation* find_allocation(uintptr_t p) const;
  /// Checks step `step`'s declared extents for `launch` and fills `avail`.
  /// `regions` (one per param) may be null.
  Status check_extents(uint32_t step, const cpu::CpuLaunch& launch, const ParamRegion* regions, uint64_t* avail) const;

  CpuKernelResolver resolver_;
  std::vector<const cpu::CpuKernel*> kernels_;  ///< by step index, set by load_kernels
  std::vector<std::string> symbols_;            ///< by step index, set by load_kernels
  cpu::GemvPackedStore gemv_packed_;            ///< packed decode GEMV weights (prepare_weights)
  std::vector<uint32_t> num_params_;            ///< by step index
  std::vector<std::vector<uint8_t>> is_pointer_;  ///< by step index, by param: a ptr or buffer param
  std::vector<Allocation> allocations_;         ///< sorted by start; owned ones unmapped in the destructor
  std::unique_ptr<cpu::Collective> collective_;  ///< this rank's endpoint; null on a device of one rank
};

/// A CpuDevice resolving through kern::cpu::find_cpu_kernel (kernels-src/cpu).
std::unique_ptr<Device> make_cpu_device();

}  // namespace kern::load
