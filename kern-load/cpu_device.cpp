// The cpu reference device: host memory and reference kernels (cpu_device.h).
#include "kern-load/cpu_device.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kern-load/launch_staging.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/parallel.h"

namespace kern::load {

CpuDevice::CpuDevice(CpuKernelResolver resolver) : resolver_(std::move(resolver)) {}

CpuDevice::~CpuDevice() {
  for (const Allocation& a : allocations_)
    if (a.map_base != nullptr) munmap(a.map_base, a.map_length);
}

void CpuDevice::record(Allocation a) {
  auto at = std::upper_bound(allocations_.begin(), allocations_.end(), a.start,
                             [](uintptr_t s, const Allocation& x) { return s < x.start; });
  allocations_.insert(at, std::move(a));
}

Result<DevicePtr> CpuDevice::allocate(uint64_t size_bytes, uint64_t align_bytes) {
  if (align_bytes == 0 || (align_bytes & (align_bytes - 1)) != 0)
    return make_error(ErrorKind::kDevice, "alignment " + std::to_string(align_bytes) + " B is not a power of two");
  // Anonymous pages read as zero and take no memory until written: a state's
  // unused tail or an arena region a short run never reaches costs nothing,
  // and nothing is cleared eagerly. Page alignment covers align_bytes <=
  // 4096; a larger alignment maps align_bytes more and starts inside.
  const uint64_t page = 4096;
  const uint64_t extra = align_bytes > page ? align_bytes : 0;
  const uint64_t wanted = std::max<uint64_t>(size_bytes, 1);
  if (wanted > UINT64_MAX - extra || wanted + extra > SIZE_MAX)
    return make_error(ErrorKind::kDevice, "allocation size " + std::to_string(size_bytes) + " B overflows");
  const size_t length = static_cast<size_t>(wanted + extra);
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED)
    return make_error(ErrorKind::kDevice, "out of host memory allocating " + std::to_string(size_bytes) +
                                              " B (mmap: " + std::strerror(errno) + ")");
  const auto addr = reinterpret_cast<uintptr_t>(base);
  const uintptr_t start = (addr + align_bytes - 1) / align_bytes * align_bytes;
  // The requested size, not the mapped one: a kernel may touch only what the plan asked for.
  record(Allocation{start, size_bytes, {}, base, length});
  return static_cast<DevicePtr>(start);
}

Status CpuDevice::free(DevicePtr ptr) {
  if (ptr == 0) return {};
  auto it = std::find_if(allocations_.begin(), allocations_.end(),
                         [ptr](const Allocation& a) { return a.start == ptr && a.map_base != nullptr; });
  if (it == allocations_.end())
    return make_error(ErrorKind::kDevice, "freeing an address this device did not allocate");
  munmap(it->map_base, it->map_length);
  allocations_.erase(it);
  return {};
}

std::optional<DevicePtr> CpuDevice::host_view(const void* host, uint64_t size_bytes, uint64_t align_bytes) {
  const auto addr = reinterpret_cast<uintptr_t>(host);
  if (host == nullptr || align_bytes == 0 || addr % align_bytes != 0) return std::nullopt;
  record(Allocation{addr, size_bytes, {}, nullptr, 0});
  return static_cast<DevicePtr>(addr);
}

Status CpuDevice::fill_bytes(DevicePtr dst, uint8_t value, uint64_t size_bytes) {
  std::memset(reinterpret_cast<void*>(dst), value, static_cast<size_t>(size_bytes));
  return {};
}

void CpuDevice::name_allocation(DevicePtr ptr, const std::string& name) {
  for (Allocation& a : allocations_)
    if (a.start == ptr) a.name = name;
}

const CpuDevice::Allocation* CpuDevice::find_allocation(uintptr_t p) const {
  auto it = std::upper_bound(allocations_.begin(), allocations_.end(), p,
                             [](uintptr_t s, const Allocation& a) { return s < a.start; });
  if (it == allocations_.begin()) return nullptr;
  --it;
  // A pointer one past the end belongs to no buffer (it may touch nothing).
  return p - it->start < it->size_bytes ? &*it : nullptr;
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
  symbols_.assign(steps->size(), {});
  is_pointer_.assign(steps->size(), {});
  for (flatbuffers::uoffset_t i = 0; i < steps->size(); ++i) {
    const auto* step = steps->Get(i);
    const cpu::CpuKernel* k = resolver_(step->symbol()->string_view());
    if (k == nullptr)
      return make_error(ErrorKind::kKernel, "steps[" + std::to_string(i) + "]: symbol '" + step->symbol()->str() +
                                                "' has no cpu reference kernel");
    if (step->params()->size() > cpu::kMaxCpuParams)
      return make_error(ErrorKind::kKernel, "steps[" + std::to_string(i) + "]: symbol '" + step->symbol()->str() +
                                                "' has " + std::to_string(step->params()->size()) +
                                                " params; the cpu device supports " +
                                                std::to_string(cpu::kMaxCpuParams));
    kernels_[i] = k;
    symbols_[i] = step->symbol()->str();
    num_params_[i] = step->params()->size();
    for (const auto* param : *step->params())
      is_pointer_[i].push_back(param->kind() == plan::ParamKind::ptr || param->kind() == plan::ParamKind::buffer);
  }
  return {};
}

Status CpuDevice::check_extents(uint32_t step, const cpu::CpuLaunch& launch, const ParamRegion* regions,
                                uint64_t* avail) const {
  cpu::CpuExtents extents;
  KERN_RETURN_IF_ERROR(kernels_[step]->extents(launch, extents));
  const std::vector<uint8_t>& is_pointer = is_pointer_[step];
  for (size_t i = 0; i < launch.num_args; ++i) {
    avail[i] = 0;
    if (!is_pointer[i]) continue;
    const auto p = launch.arg<uintptr_t>(i);
    const Allocation* a = find_allocation(p);
    if (a != nullptr) avail[i] = a->start + a->size_bytes - p;
    // A region inside an allocation (the arena) bounds the pointer tighter.
    if (a != nullptr && regions != nullptr && regions[i].size_bytes != 0)
      avail[i] = std::min(avail[i], regions[i].size_bytes - std::min(regions[i].offset, regions[i].size_bytes));
  }
  for (size_t i = 0; i < cpu::kMaxCpuParams; ++i) {
    const uint64_t bytes = extents.bytes[i];
    if (bytes == 0) continue;
    const std::string param = "param " + std::to_string(i) + " (" + (extents.names[i] ? extents.names[i] : "?") + ")";
    if (i >= launch.num_args || !is_pointer[i])
      return make_error(ErrorKind::kManifest, param + " is declared to touch " + std::to_string(bytes) +
                                                  " B but the step passes no pointer there");
    const auto p = launch.arg<uintptr_t>(i);
    const Allocation* a = find_allocation(p);
    const std::string need = "may touch " + std::to_string(bytes) + " B";
    if (p == 0) return make_error(ErrorKind::kManifest, param + " is a null pointer and the launch " + need);
    if (a == nullptr)
      return make_error(ErrorKind::kManifest,
                        param + " points outside every buffer of the cpu device and the launch " + need);
    if (bytes > avail[i]) {
      const bool region = regions != nullptr && regions[i].size_bytes != 0 && regions[i].name != nullptr;
      const std::string buffer = region ? *regions[i].name : a->name.empty() ? "an allocation" : a->name;
      const uint64_t offset = region ? regions[i].offset : p - a->start;
      const uint64_t size = region ? regions[i].size_bytes : a->size_bytes;
      return make_error(ErrorKind::kManifest,
                        param + " " + need + " from offset " + std::to_string(offset) + " of " + buffer + " (" +
                            std::to_string(size) + " B): " + std::to_string(bytes - avail[i]) +
                            " B past its end; the launch's size params do not fit its buffers");
    }
  }
  return {};
}

Status CpuDevice::launch(uint32_t step, const LaunchDims& dims, void** kernel_params) {
  return launch_in_regions(step, dims, kernel_params, nullptr);
}

Status CpuDevice::launch_in_regions(uint32_t step, const LaunchDims& dims, void** kernel_params,
                                    const ParamRegion* regions) {
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
  uint64_t avail[cpu::kMaxCpuParams];
  KERN_RETURN_IF_ERROR(check_extents(step, launch, regions, avail));
  launch.avail = avail;
  launch.collective = collective_.get();
  if (gemv_packed_.bytes() != 0) launch.gemv_packed = &gemv_packed_;
  return kernels_[step]->run(launch);
}

Result<uint64_t> CpuDevice::prepare_weights(const std::vector<StagedProgram>& programs,
                                            std::span<const WeightRange> weights) {
  uint64_t bytes = 0;
  for (const StagedProgram& program : programs) {
    for (const StagedLaunch& sl : program.launches) {
      if (sl.step >= kernels_.size()) continue;
      cpu::CpuLaunch launch;
      launch.args = program.param_ptrs.data() + sl.first_param;
      launch.num_args = sl.num_params;
      cpu::GemvWOperand op;
      if (!cpu::gemv_w_operand(symbols_[sl.step], launch, op)) continue;
      // A param recomputed per run (an expression of the symbols) has no
      // value yet: such a w is read as given.
      bool fixed = true;
      for (uint32_t q = sl.first_patch; q < sl.first_patch + sl.num_patches; ++q)
        for (const size_t param : op.params)
          if (program.patches[q].slot == sl.first_param + param) fixed = false;
      if (!fixed || !cpu::gemv_packable(op.rows, op.k, op.splits)) continue;
      const auto start = reinterpret_cast<uintptr_t>(op.w);
      const uint64_t size = static_cast<uint64_t>(op.rows) * static_cast<uint64_t>(op.k) * 2;
      const bool in_weight = std::any_of(weights.begin(), weights.end(), [&](const WeightRange& r) {
        return start >= r.start && start - r.start <= r.size_bytes && size <= r.size_bytes - (start - r.start);
      });
      if (!in_weight) continue;
      KERN_ASSIGN_OR_RETURN(auto added,
                            gemv_packed_.add(op.w, op.rows, op.k, op.splits, cpu::cpu_threads(op.rows * op.k, op.rows)),
                            "step " + std::to_string(sl.step) + " (" + symbols_[sl.step] + ")");
      bytes += added;
    }
  }
  return bytes;
}

}  // namespace kern::load
