// The Executable's cold-path debugging API (executable.h): run a range of a
// program's launches and read or write any buffer, state or scratch between
// ranges (`kern-run compare`, docs/compare.md). Deliberately separate from
// run_program's replay: nothing here is on the hot path, every call checks
// its arguments, and graphs are never used.
#include <string>

#include "kern-load/executable.h"

namespace kern::load {

Status Executable::run_launches(uint32_t program, std::span<const uint64_t> symbol_values, uint32_t first,
                                uint32_t count) {
  KERN_RETURN_IF_ERROR(check_open());
  if (program >= staged_.size())
    return make_error(ErrorKind::kUsage, "program index " + std::to_string(program) + " out of range (" +
                                             std::to_string(staged_.size()) + " programs)");
  StagedProgram& sp = staged_[program];
  const uint64_t end = uint64_t{first} + count;
  if (end > sp.launches.size())
    return make_error(ErrorKind::kUsage, "launches [" + std::to_string(first) + ", " + std::to_string(end) +
                                             ") of program '" + plan().programs()->Get(program)->name()->str() +
                                             "' (" + std::to_string(sp.launches.size()) + " launches)");
  KERN_RETURN_IF_ERROR(check_symbols(symbol_values));
  if (poison_ && first == 0) {
    KERN_RETURN_IF_ERROR(poison_arena(), "--poison-workspace");
  }
  int64_t bad = apply_symbols(sp, symbol_values);
  if (bad >= 0)
    return make_error(ErrorKind::kDevice,
                      "grid, shared memory or an expression argument overflows at these symbol values")
        .with_context(launch_context(program, static_cast<size_t>(bad)));
  last_symbols_.assign(symbol_values.begin(), symbol_values.end());
  KERN_RETURN_IF_ERROR(launch_range(program, first, end));
  traffic_.launches += count;
  return {};
}

Result<std::pair<DevicePtr, uint64_t>> Executable::region_extent(RegionRef r) const {
  const std::vector<Region>* regions = nullptr;
  const std::vector<DevicePtr>* addrs = nullptr;
  switch (r.kind) {
    case RegionKind::kBuffer: regions = &memory_.buffers; addrs = &addr_.buffers; break;
    case RegionKind::kState: regions = &memory_.states; addrs = &addr_.states; break;
    case RegionKind::kScratch: regions = &memory_.scratch; addrs = &addr_.scratch; break;
  }
  if (regions == nullptr || r.index >= regions->size())
    return make_error(ErrorKind::kUsage, region_name(r) + ": index " + std::to_string(r.index) + " out of range");
  return std::pair<DevicePtr, uint64_t>{(*addrs)[r.index], (*regions)[r.index].size_bytes};
}

std::string Executable::region_name(RegionRef r) const {
  const plan::Plan& p = plan();
  switch (r.kind) {
    case RegionKind::kBuffer:
      if (r.index < p.buffers()->size()) return "buffer '" + p.buffers()->Get(r.index)->name()->str() + "'";
      return "buffer ?";
    case RegionKind::kState:
      if (r.index < p.states()->size()) return "state '" + p.states()->Get(r.index)->name()->str() + "'";
      return "state ?";
    case RegionKind::kScratch:
      if (r.index < p.scratch()->size()) return "scratch '" + p.scratch()->Get(r.index)->name()->str() + "'";
      return "scratch ?";
  }
  return "region ?";
}

Result<uint64_t> Executable::region_size_bytes(RegionRef r) const {
  KERN_ASSIGN_OR_RETURN(auto extent, region_extent(r));
  return extent.second;
}

namespace {

/// kUsage unless [offset, offset + n) lies in a region of `size` bytes.
Status check_range(const char* verb, uint64_t n, uint64_t offset, const std::string& what, uint64_t size) {
  if (offset <= size && n <= size - offset) return {};
  return make_error(ErrorKind::kUsage, std::string(verb) + " " + std::to_string(n) + " B at offset " +
                                           std::to_string(offset) + " of " + what + " of " + std::to_string(size) +
                                           " B");
}

}  // namespace

Status Executable::read_region(RegionRef r, uint64_t offset_bytes, std::span<uint8_t> out) {
  KERN_RETURN_IF_ERROR(check_open());
  KERN_ASSIGN_OR_RETURN(auto extent, region_extent(r));
  KERN_RETURN_IF_ERROR(check_range("reading", out.size(), offset_bytes, region_name(r), extent.second));
  if (out.empty()) return {};
  ++traffic_.host_waits;  // copy_to_host drains the device
  return device_->copy_to_host(out.data(), extent.first + offset_bytes, out.size());
}

Status Executable::write_region(RegionRef r, uint64_t offset_bytes, std::span<const uint8_t> bytes) {
  KERN_RETURN_IF_ERROR(check_open());
  KERN_ASSIGN_OR_RETURN(auto extent, region_extent(r));
  if (r.kind == RegionKind::kBuffer && plan().buffers()->Get(r.index)->class_() == plan::BufferClass::weight)
    return make_error(ErrorKind::kUsage, region_name(r) + " is a weight: weights cannot be written");
  KERN_RETURN_IF_ERROR(check_range("writing", bytes.size(), offset_bytes, region_name(r), extent.second));
  if (bytes.empty()) return {};
  ++traffic_.host_writes;
  return device_->copy_to_device(extent.first + offset_bytes, bytes.data(), bytes.size());
}

}  // namespace kern::load
