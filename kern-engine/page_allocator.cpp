// The KV pool's page allocator (page_allocator.h).
#include "kern-engine/page_allocator.h"

#include <string>

#include "kern-engine/causal_lm_contract.h"

namespace kern::engine {

PageAllocator::PageAllocator(uint32_t pages) : used_(pages, false), free_count_(pages) {}

Result<std::vector<int32_t>> PageAllocator::allocate(uint32_t n) {
  if (n > free_count_)
    return make_error(ErrorKind::kUsage, std::to_string(n) + " pages wanted, " + std::to_string(free_count_) +
                                             " of " + std::to_string(used_.size()) + " free");
  std::vector<int32_t> out;
  out.reserve(n);
  for (size_t p = 0; p < used_.size() && out.size() < n; ++p) {
    if (used_[p]) continue;
    used_[p] = true;
    out.push_back(static_cast<int32_t>(p));
  }
  free_count_ -= n;
  return out;
}

void PageAllocator::release(std::span<const int32_t> pages) {
  for (const int32_t p : pages) {
    if (p < 0 || static_cast<size_t>(p) >= used_.size() || !used_[static_cast<size_t>(p)]) continue;
    used_[static_cast<size_t>(p)] = false;
    ++free_count_;
  }
}

uint32_t pages_for_tokens(uint64_t tokens) {
  return static_cast<uint32_t>((tokens + kKvBlockTokens - 1) / kKvBlockTokens);
}

}  // namespace kern::engine
