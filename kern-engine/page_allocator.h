// The KV pool's page allocator (docs/batching.md): the pool is the KV state
// the Model was loaded with, `capacity / 16` pages of kKvBlockTokens tokens;
// a sequence owns the pages listed in its row of the block tables. The
// runtime stays model-agnostic: pages are indices the caller writes into the
// tables, nothing more. Pages are handed out lowest first, so a run is
// deterministic. Not thread-safe (the engine thread owns it).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"

namespace kern::engine {

class PageAllocator {
 public:
  /// A pool of `pages` pages, all free.
  explicit PageAllocator(uint32_t pages);

  /// Takes `n` free pages (lowest indices first) and returns them in
  /// ascending order. Errors (kUsage): fewer than `n` pages free ("6 pages
  /// wanted, 4 of 10 free"); nothing is taken then.
  Result<std::vector<int32_t>> allocate(uint32_t n);
  /// Returns `pages` to the pool. A page outside the pool or already free is
  /// ignored (a double release never hands one page to two owners).
  void release(std::span<const int32_t> pages);

  uint32_t free_pages() const { return free_count_; }
  uint32_t total_pages() const { return static_cast<uint32_t>(used_.size()); }

 private:
  std::vector<bool> used_;  ///< per page: owned by a sequence
  uint32_t free_count_ = 0;
};

/// Pages a sequence of `tokens` KV positions needs: ceil(tokens / 16).
uint32_t pages_for_tokens(uint64_t tokens);

}  // namespace kern::engine
