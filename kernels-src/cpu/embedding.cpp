// kern_embedding_bf16 (docs/kernels.md §1): a row gather from the embedding
// table. Out-of-range ids write a zero row and never read the table
// (kern-run rejects such ids before launch; this is the second line).
#include <cstring>

#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {
constexpr const char* kName = "kern_embedding_bf16";
}  // namespace

Status embedding_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 6));
  int64_t tokens = 0, hidden = 0, vocab = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 3, "num_tokens", 0, tokens));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 4, "hidden", 0, hidden));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 5, "vocab", 0, vocab));
  const bool work = tokens > 0 && hidden > 0;
  const int64_t* ids = nullptr;
  const uint16_t* table = nullptr;
  uint16_t* out = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "token_ids", tokens > 0, ids));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "table", work && vocab > 0, table));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 2, "out", work, out));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, tokens, "one block per token"));

  const size_t row_bytes = static_cast<size_t>(hidden) * sizeof(uint16_t);
  for (int64_t t = 0; t < tokens && hidden > 0; ++t) {
    const int64_t id = ids[t];
    uint16_t* dst = out + t * hidden;
    if (id < 0 || id >= vocab) {
      std::memset(dst, 0, row_bytes);  // bf16 +0.0 is all-zero bits
    } else {
      std::memcpy(dst, table + id * hidden, row_bytes);  // a bf16 copy is exact
    }
  }
  return Status::ok_status();
}

Status embedding_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t tokens = size_i32(l, 3), hidden = size_i32(l, 4), vocab = size_i32(l, 5);
  if (tokens == 0 || hidden == 0) return Status::ok_status();
  e.touch(0, "token_ids", sat_mul(tokens, 8));
  e.touch(1, "table", sat_product({vocab, hidden, 2}));  // any in-range id may be read
  e.touch(2, "out", sat_product({tokens, hidden, 2}));
  return Status::ok_status();
}

}  // namespace kern::cpu
