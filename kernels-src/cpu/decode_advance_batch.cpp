// The cpu reference of kern_decode_advance_batch (docs/kernels.md §16): the
// last kernel of the Qwen3 `decode_batch` program. Row r of the batch is
// one sequence; it feeds row r's sampled token back and advances its
// position, KV slot (through row r of the block tables) and length, so
// batched steps need no host write while the batch composition stays. A
// free slot (seq_lens[r] <= 0) is left as it is. Same ABI and bits as the
// CUDA kernel (kernels-src/cuda/decode_advance_batch.cu).
#include <cstdint>

#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {
constexpr const char* kName = "kern_decode_advance_batch";
}  // namespace

Status decode_advance_batch(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 9));
  int64_t rows = 0, pages = 0, page_size = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 6, "num_seqs", 0, rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 7, "pages_per_seq", 0, pages));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 8, "page_size", 1, page_size));
  const bool work = rows > 0;
  const int64_t* next_token = nullptr;
  const int32_t* tables = nullptr;
  int64_t *token_ids = nullptr, *positions = nullptr, *slot_mapping = nullptr;
  int32_t* seq_lens = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "next_token", work, next_token));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "block_tables", work && pages > 0, tables));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 2, "token_ids", work, token_ids));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 3, "positions", work, positions));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 4, "slot_mapping", work, slot_mapping));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 5, "seq_lens", work, seq_lens));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, work ? (rows + 63) / 64 : 0, "one thread per row, 64 per block"));
  for (int64_t r = 0; r < rows; ++r) {
    if (seq_lens[r] <= 0) continue;  // a free batch slot
    // Wrapping arithmetic, as the CUDA kernel's: garbage in, garbage out, no UB.
    const int64_t p = static_cast<int64_t>(static_cast<uint64_t>(positions[r]) + 1);
    const int64_t page = p >= 0 ? p / page_size : -1;
    const int64_t entry = page >= 0 && page < pages ? static_cast<int64_t>(tables[r * pages + page]) : -1;
    token_ids[r] = next_token[r];
    positions[r] = p;
    slot_mapping[r] = entry >= 0 ? entry * page_size + p % page_size : -1;
    seq_lens[r] = static_cast<int32_t>(static_cast<uint32_t>(seq_lens[r]) + 1u);
  }
  return Status::ok_status();
}

Status decode_advance_batch_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 6), pages = size_i32(l, 7);
  if (rows == 0) return Status::ok_status();
  e.touch(0, "next_token", sat_mul(rows, 8));
  if (pages > 0) e.touch(1, "block_tables", sat_product({rows, pages, 4}));
  e.touch(2, "token_ids", sat_mul(rows, 8));
  e.touch(3, "positions", sat_mul(rows, 8));
  e.touch(4, "slot_mapping", sat_mul(rows, 8));
  e.touch(5, "seq_lens", sat_mul(rows, 4));
  return Status::ok_status();
}

}  // namespace kern::cpu
