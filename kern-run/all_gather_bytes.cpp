// A variable-size all-gather (all_gather_bytes.h).
#include "kern-run/all_gather_bytes.h"

#include <algorithm>
#include <string>

namespace kern::run {

Result<std::vector<std::vector<uint8_t>>> all_gather_bytes(cpu::Collective& collective,
                                                           std::span<const uint8_t> mine, uint64_t max_bytes,
                                                           const char* what) {
  if (mine.size() > max_bytes)
    return make_error(ErrorKind::kUsage, std::string(what) + " of " + std::to_string(mine.size()) +
                                             " bytes exceed " + std::to_string(max_bytes));
  const uint32_t world = collective.world();
  const uint64_t my_size = mine.size();
  std::vector<uint64_t> sizes(world);
  KERN_RETURN_IF_ERROR(collective.all_gather(&my_size, sizes.data(), sizeof(uint64_t)), what);
  for (uint32_t r = 0; r < world; ++r)
    if (sizes[r] > max_bytes)
      return make_error(ErrorKind::kDevice, std::string(what) + ": rank " + std::to_string(r) + " sent a size of " +
                                                std::to_string(sizes[r]) + " bytes (at most " +
                                                std::to_string(max_bytes) + ")");
  const uint64_t slot = *std::max_element(sizes.begin(), sizes.end());
  std::vector<std::vector<uint8_t>> out(world);
  if (slot == 0) return out;
  std::vector<uint8_t> in(slot, 0);
  std::copy(mine.begin(), mine.end(), in.begin());
  std::vector<uint8_t> all(slot * world);
  KERN_RETURN_IF_ERROR(collective.all_gather(in.data(), all.data(), slot), what);
  for (uint32_t r = 0; r < world; ++r)
    out[r].assign(all.begin() + static_cast<ptrdiff_t>(r * slot),
                  all.begin() + static_cast<ptrdiff_t>(r * slot + sizes[r]));
  return out;
}

}  // namespace kern::run
