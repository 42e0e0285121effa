// The KV pool's page allocator and prefix cache (page_allocator.h).
#include "kern-engine/page_allocator.h"

#include <algorithm>
#include <string>

namespace kern::engine {

size_t PageAllocator::KeyHash::operator()(const Key& k) const {
  // FNV-1a over the parent key and the token ids: a bucket choice only; the
  // index compares whole keys, so a collision never maps a wrong page.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(k.parent);
  for (const int64_t t : k.tokens) mix(static_cast<uint64_t>(t));
  return static_cast<size_t>(h);
}

PageAllocator::PageAllocator(uint32_t pages)
    : refs_(pages, 0), page_key_(pages, 0), page_block_(pages), lru_pos_(pages), free_count_(pages) {}

uint32_t PageAllocator::holds(int32_t page) const {
  return page >= 0 && static_cast<size_t>(page) < refs_.size() ? refs_[static_cast<size_t>(page)] : 0;
}

Result<std::vector<int32_t>> PageAllocator::allocate(uint32_t n) {
  if (n > free_pages())
    return make_error(ErrorKind::kUsage, std::to_string(n) + " pages wanted, " + std::to_string(free_pages()) +
                                             " of " + std::to_string(refs_.size()) + " free" +
                                             (lru_.empty() ? "" : " (" + std::to_string(lru_.size()) +
                                                                      " of them cached)"));
  std::vector<int32_t> out;
  out.reserve(n);
  for (size_t p = 0; p < refs_.size() && out.size() < n && free_count_ > 0; ++p) {
    if (refs_[p] != 0 || page_key_[p] != 0) continue;
    refs_[p] = 1;
    --free_count_;
    out.push_back(static_cast<int32_t>(p));
  }
  while (out.size() < n) {  // fits: free_pages() counted the cached pages nobody holds
    const int32_t p = lru_.front();
    lru_.pop_front();
    evict(p);
    ++evictions_;
    refs_[static_cast<size_t>(p)] = 1;
    out.push_back(p);
  }
  return out;
}

void PageAllocator::evict(int32_t page) {
  const size_t p = static_cast<size_t>(page);
  index_.erase(page_block_[p]);
  page_key_[p] = 0;
}

void PageAllocator::retain(std::span<const int32_t> pages) {
  for (const int32_t page : pages) {
    if (page < 0 || static_cast<size_t>(page) >= refs_.size()) continue;
    const size_t p = static_cast<size_t>(page);
    if (refs_[p] == 0) {
      if (page_key_[p] == 0) continue;  // a free page is taken through allocate()
      lru_.erase(lru_pos_[p]);
    }
    ++refs_[p];
  }
}

void PageAllocator::release(std::span<const int32_t> pages) {
  for (const int32_t page : pages) {
    if (page < 0 || static_cast<size_t>(page) >= refs_.size() || refs_[static_cast<size_t>(page)] == 0) continue;
    const size_t p = static_cast<size_t>(page);
    if (--refs_[p] > 0) continue;
    if (page_key_[p] != 0) {
      lru_pos_[p] = lru_.insert(lru_.end(), page);
    } else {
      ++free_count_;
    }
  }
}

PrefixHit PageAllocator::match(std::span<const int64_t> tokens, uint32_t max_pages) const {
  PrefixHit hit;
  Key k;
  for (uint32_t i = 0; i < max_pages && (uint64_t{i} + 1) * kKvBlockTokens <= tokens.size(); ++i) {
    k.parent = hit.key;
    std::copy_n(tokens.begin() + static_cast<ptrdiff_t>(uint64_t{i} * kKvBlockTokens), kKvBlockTokens,
                k.tokens.begin());
    auto it = index_.find(k);
    if (it == index_.end()) break;
    hit.pages.push_back(it->second.first);
    hit.key = it->second.second;
  }
  return hit;
}

Result<BlockKey> PageAllocator::publish(BlockKey parent, std::span<const int64_t> block, int32_t page) {
  if (block.size() != kKvBlockTokens)
    return make_error(ErrorKind::kUsage, "a cached block holds " + std::to_string(kKvBlockTokens) + " tokens, not " +
                                             std::to_string(block.size()));
  if (holds(page) == 0 || page_key_[static_cast<size_t>(page)] != 0)
    return make_error(ErrorKind::kUsage, "page " + std::to_string(page) + " is not held or already cached");
  Key k;
  k.parent = parent;
  std::copy(block.begin(), block.end(), k.tokens.begin());
  auto [it, added] = index_.try_emplace(k, page, next_key_);
  if (!added) return it->second.second;  // another page holds this block already
  const size_t p = static_cast<size_t>(page);
  page_key_[p] = next_key_++;
  page_block_[p] = k;
  return page_key_[p];
}

uint32_t pages_for_tokens(uint64_t tokens) {
  return static_cast<uint32_t>((tokens + kKvBlockTokens - 1) / kKvBlockTokens);
}

}  // namespace kern::engine
