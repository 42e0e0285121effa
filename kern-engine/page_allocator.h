// The KV pool's page allocator (docs/batching.md) and its prefix cache
// (docs/serving.md, "Prefix caching"): the pool is the KV state the Model
// was loaded with, `capacity / 16` pages of kKvBlockTokens tokens; a
// sequence holds the pages listed in its row of the block tables. The
// runtime stays model-agnostic: pages are indices the caller writes into the
// tables, nothing more.
//
// Pages are reference-counted: a full page whose KV is written can be keyed
// by its tokens and the key of the page before it (a chain from position
// 0, vLLM's automatic prefix caching), and then shared by every sequence
// whose tokens start the same way. A keyed page nobody holds stays cached
// (least recently released first out) until allocate() needs it; such a
// page counts as free. Pages are handed out lowest free index first, then
// the least recently released cached page, so a run is deterministic. Not
// thread-safe (the engine thread owns it).
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "kern-engine/causal_lm_contract.h"

namespace kern::engine {

/// A key of the prefix cache's chain: 0 is the empty prefix (position 0).
using BlockKey = uint64_t;

/// The cached pages a token sequence starts with.
struct PrefixHit {
  std::vector<int32_t> pages;  ///< in position order: page i holds tokens [16 i, 16 i + 16)
  BlockKey key = 0;            ///< the key of the last one (0: none)
};

class PageAllocator {
 public:
  /// A pool of `pages` pages, all free.
  explicit PageAllocator(uint32_t pages);

  /// Takes `n` pages, held once each: free pages (lowest indices first),
  /// then cached pages nobody holds (least recently released first; their
  /// keys are dropped: an eviction). Returns them in the order taken.
  /// Errors (kUsage): fewer than `n` pages free or evictable ("6 pages
  /// wanted, 4 of 10 free (2 of them cached)"); nothing is taken then.
  Result<std::vector<int32_t>> allocate(uint32_t n);
  /// Holds cached `pages` once more (a sequence maps them); a page nobody
  /// held leaves the eviction order.
  void retain(std::span<const int32_t> pages);
  /// Drops one hold of each of `pages`, in order. A page nobody holds then
  /// is cached (newest in the eviction order) when keyed, else free. A page
  /// outside the pool or not held is ignored (a double release never hands
  /// one page to two owners). Release a sequence's pages last first, so that
  /// a prefix outlives its continuations.
  void release(std::span<const int32_t> pages);

  /// Pages free or evictable (cached, held by nobody): what allocate() can take.
  uint32_t free_pages() const { return free_count_ + static_cast<uint32_t>(lru_.size()); }
  uint32_t total_pages() const { return static_cast<uint32_t>(refs_.size()); }
  /// Pages holding a key (held or not).
  uint32_t cached_pages() const { return static_cast<uint32_t>(index_.size()); }
  /// Cached pages nobody holds.
  uint32_t evictable_pages() const { return static_cast<uint32_t>(lru_.size()); }
  /// Cached pages taken by allocate() since construction.
  uint64_t evictions() const { return evictions_; }
  /// Holds of `page` (0 for a page outside the pool).
  uint32_t holds(int32_t page) const;

  /// The longest run of cached pages holding `tokens`' first full 16-token
  /// blocks, at most `max_pages`. Holds nothing (call retain()).
  PrefixHit match(std::span<const int64_t> tokens, uint32_t max_pages) const;
  /// Keys the held page `page`, whose KV holds `block` (16 tokens) after the
  /// prefix keyed `parent`, and returns the block's key. When that block is
  /// already cached in another page, `page` stays unkeyed (it is freed when
  /// released) and the cached page's key is returned. Errors (kUsage): a
  /// block not of 16 tokens, a page not held or already keyed.
  Result<BlockKey> publish(BlockKey parent, std::span<const int64_t> block, int32_t page);

 private:
  struct Key {
    BlockKey parent = 0;
    std::array<int64_t, kKvBlockTokens> tokens{};
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  /// Drops `page`'s key (it is being reused).
  void evict(int32_t page);

  std::vector<uint32_t> refs_;          ///< per page: holds
  std::vector<BlockKey> page_key_;      ///< per page: its key (0: unkeyed)
  std::vector<Key> page_block_;         ///< per keyed page: its index entry
  std::vector<std::list<int32_t>::iterator> lru_pos_;  ///< per page in lru_
  std::list<int32_t> lru_;              ///< cached pages nobody holds, least recently released first
  std::unordered_map<Key, std::pair<int32_t, BlockKey>, KeyHash> index_;  ///< block -> (page, its key)
  uint32_t free_count_ = 0;             ///< unkeyed pages nobody holds
  BlockKey next_key_ = 1;
  uint64_t evictions_ = 0;
};

/// Pages a sequence of `tokens` KV positions needs: ceil(tokens / 16).
uint32_t pages_for_tokens(uint64_t tokens);

}  // namespace kern::engine
