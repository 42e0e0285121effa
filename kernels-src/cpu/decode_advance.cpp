// The decode step advance (docs/kernels.md §14): the last kernel of the
// Qwen3 `decode` program. It feeds the sampled token back as the next step's
// input and advances the step counters, so consecutive decode steps need no
// host write (docs/causal-lm-manifest.md, "Who writes what").
#include <cstdint>

#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {
constexpr const char* kName = "kern_decode_advance";
}  // namespace

Status decode_advance(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 9));
  int64_t tokens = 0, pages = 0, page_size = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 6, "num_tokens", 0, tokens));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 7, "max_pages", 0, pages));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 8, "page_size", 1, page_size));
  const bool work = tokens > 0;
  const int64_t* next_token = nullptr;
  const int32_t* block_table = nullptr;
  int64_t *token_ids = nullptr, *positions = nullptr, *slot_mapping = nullptr;
  int32_t* seq_lens = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "next_token", work, next_token));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "block_table", work && pages > 0, block_table));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 2, "token_ids", work, token_ids));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 3, "positions", work, positions));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 4, "slot_mapping", work, slot_mapping));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 5, "seq_lens", work, seq_lens));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, work ? 1 : 0, "one block"));
  if (!work) return Status::ok_status();

  // Wrapping arithmetic (as the CUDA twin's): garbage counters give garbage,
  // never undefined behaviour. A position outside the block table (or
  // negative) gets slot -1, which the KV-cache write skips; the table is
  // read only below max_pages (its declared extent).
  const int64_t last = tokens - 1;
  const int64_t p = static_cast<int64_t>(static_cast<uint64_t>(positions[last]) + 1);
  const int64_t page = p >= 0 ? p / page_size : -1;
  const int64_t slot = page >= 0 && page < pages
                           ? static_cast<int64_t>(block_table[page]) * page_size + p % page_size
                           : -1;
  token_ids[0] = next_token[last];
  positions[0] = p;
  slot_mapping[0] = slot;
  seq_lens[0] = static_cast<int32_t>(static_cast<uint32_t>(seq_lens[0]) + 1u);
  return Status::ok_status();
}

Status decode_advance_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t tokens = size_i32(l, 6), pages = size_i32(l, 7);
  if (tokens == 0) return Status::ok_status();
  e.touch(0, "next_token", sat_mul(tokens, 8));  // row T-1
  if (pages > 0) e.touch(1, "block_table", sat_mul(pages, 4));  // one entry below max_pages
  e.touch(2, "token_ids", 8);                     // row 0
  e.touch(3, "positions", sat_mul(tokens, 8));    // row T-1 read, row 0 written
  e.touch(4, "slot_mapping", 8);                  // row 0
  e.touch(5, "seq_lens", 4);
  return Status::ok_status();
}

}  // namespace kern::cpu
