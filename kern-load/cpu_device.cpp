#include "kern-load/cpu_device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace kern::load {

CpuDevice::CpuDevice(CpuKernelResolver resolver) : resolver_(std::move(resolver)) {}

CpuDevice::~CpuDevice() {
  for (void* p : allocations_) std::free(p);
}

Result<DevicePtr> CpuDevice::allocate(uint64_t size_bytes, uint64_t align_bytes) {
  if (align_bytes == 0 || (align_bytes & (align_bytes - 1)) != 0)
    return make_error(ErrorKind::kDevice, "alignment " + std::to_string(align_bytes) + " B is not a power of two");
  // aligned_alloc needs a size that is a multiple of the alignment.
  uint64_t rounded = (std::max<uint64_t>(size_bytes, 1) + align_bytes - 1) / align_bytes * align_bytes;
  if (rounded < size_bytes) return make_error(ErrorKind::kDevice, "allocation size overflows");
  void* p = std::aligned_alloc(static_cast<size_t>(align_bytes), static_cast<size_t>(rounded));
  if (p == nullptr)
    return make_error(ErrorKind::kDevice, "out of host memory allocating " + std::to_string(size_bytes) + " B");
  std::memset(p, 0, static_cast<size_t>(rounded));
  allocations_.push_back(p);
  return reinterpret_cast<DevicePtr>(p);
}

Status CpuDevice::free(DevicePtr ptr) {
  if (ptr == 0) return {};
  void* p = reinterpret_cast<void*>(ptr);
  auto it = std::find(allocations_.begin(), allocations_.end(), p);
  if (it == allocations_.end())
    return make_error(ErrorKind::kDevice, "freeing an address this device did not allocate");
  std::free(p);
  allocations_.erase(it);
  return {};
}

Status CpuDevice::copy_to_device(DevicePtr dst, const void* src, uint64_t size_bytes) {
  std::memcpy(reinterpret_cast<void*>(dst), src, static_cast<size_t>(size_bytes));
  return {};
}

Status CpuDevice::copy_to_host(void* dst, DevicePtr src, uint64_t size_bytes) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), static_cast<size_t>(size_bytes));
  return {};
}

Status CpuDevice::load_kernels(const PlanFile& plan, const std::string& /*kernels_dir*/) {
  const auto* steps = plan.plan().steps();
  kernels_.assign(steps->size(), nullptr);
  num_params_.assign(steps->size(), 0);
  for (flatbuffers::uoffset_t i = 0; i < steps->size(); ++i) {
    const auto* step = steps->Get(i);
    cpu::CpuKernelFn fn = resolver_(step->symbol()->string_view());
    if (fn == nullptr)
      return make_error(ErrorKind::kKernel, "steps[" + std::to_string(i) + "]: symbol '" + step->symbol()->str() +
                                                "' has no cpu reference kernel");
    kernels_[i] = fn;
    num_params_[i] = step->params()->size();
  }
  return {};
}

Status CpuDevice::launch(uint32_t step, const LaunchDims& dims, void** kernel_params) {
  if (step >= kernels_.size()) [[unlikely]]
    return make_error(ErrorKind::kKernel, "step " + std::to_string(step) + " was not loaded");
  cpu::CpuLaunch launch;
  for (int d = 0; d < 3; ++d) {
    launch.grid[d] = dims.grid[d];
    launch.block[d] = dims.block[d];
  }
  launch.shared_mem_bytes = dims.shared_mem_bytes;
  launch.args = kernel_params;
  launch.num_args = num_params_[step];
  return kernels_[step](launch);
}

}  // namespace kern::load
