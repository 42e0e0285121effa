// Greedy sampling as a two-pass row argmax (docs/kernels.md §9):
// kern_argmax_partial_bf16 reduces each of num_chunks chunks of a logits row
// to (value, index) in f32/i32 scratch; kern_argmax_reduce merges a row's
// chunks into the i64 next token. Order: the larger value wins, equal values
// go to the smaller index, a NaN never wins (it is skipped). An empty chunk
// (vocab < num_chunks) writes (-inf, INT32_MAX), which loses to any logit,
// -inf included; a row with no non-NaN logit therefore yields INT32_MAX.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/bf16.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {

constexpr const char* kPartial = "kern_argmax_partial_bf16";
constexpr const char* kReduce = "kern_argmax_reduce";
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int32_t kNoIndex = std::numeric_limits<int32_t>::max();

/// True when candidate (v, i) beats the current best (best_v, best_i).
bool beats(float v, int32_t i, float best_v, int32_t best_i) {
  if (std::isnan(v)) return false;
  return v > best_v || (v == best_v && i < best_i);
}

}  // namespace

Status argmax_partial_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kPartial, 6));
  int64_t rows = 0, vocab = 0, chunks = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kPartial, 3, "rows", 0, rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kPartial, 4, "vocab", 0, vocab));
  KERN_RETURN_IF_ERROR(read_i32(l, kPartial, 5, "num_chunks", 1, chunks));
  const uint16_t* logits = nullptr;
  float* part_val = nullptr;
  int32_t* part_idx = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kPartial, 0, "logits", rows > 0 && vocab > 0, logits));
  KERN_RETURN_IF_ERROR(read_ptr(l, kPartial, 1, "partial_val", rows > 0, part_val));
  KERN_RETURN_IF_ERROR(read_ptr(l, kPartial, 2, "partial_idx", rows > 0, part_idx));
  KERN_RETURN_IF_ERROR(check_grid_equals(l, kPartial, 0, 5, "num_chunks", chunks));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kPartial, 1, rows, "one block row per logits row"));

  const int64_t len = (vocab + chunks - 1) / chunks;  // L = ceil(V / num_chunks)
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* row = logits + r * vocab;
    for (int64_t c = 0; c < chunks; ++c) {
      float best_v = kNegInf;
      int32_t best_i = kNoIndex;
      const int64_t end = std::min((c + 1) * len, vocab);
      for (int64_t j = c * len; j < end; ++j) {
        const float v = bf16_to_f32(row[j]);
        if (beats(v, static_cast<int32_t>(j), best_v, best_i)) {
          best_v = v;
          best_i = static_cast<int32_t>(j);
        }
      }
      part_val[r * chunks + c] = best_v;
      part_idx[r * chunks + c] = best_i;
    }
  }
  return Status::ok_status();
}

Status argmax_reduce(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kReduce, 5));
  int64_t rows = 0, chunks = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kReduce, 3, "rows", 0, rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kReduce, 4, "num_chunks", 1, chunks));
  const float* part_val = nullptr;
  const int32_t* part_idx = nullptr;
  int64_t* next = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kReduce, 0, "partial_val", rows > 0, part_val));
  KERN_RETURN_IF_ERROR(read_ptr(l, kReduce, 1, "partial_idx", rows > 0, part_idx));
  KERN_RETURN_IF_ERROR(read_ptr(l, kReduce, 2, "next_token", rows > 0, next));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kReduce, 0, rows, "one block per row"));

  for (int64_t r = 0; r < rows; ++r) {
    float best_v = kNegInf;
    int32_t best_i = kNoIndex;
    for (int64_t c = 0; c < chunks; ++c) {
      const float v = part_val[r * chunks + c];
      const int32_t i = part_idx[r * chunks + c];
      if (beats(v, i, best_v, best_i)) {
        best_v = v;
        best_i = i;
      }
    }
    next[r] = best_i;
  }
  return Status::ok_status();
}

Status argmax_partial_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 3), vocab = size_i32(l, 4), chunks = size_i32(l, 5);
  if (rows == 0) return Status::ok_status();
  if (vocab > 0) e.touch(0, "logits", sat_product({rows, vocab, 2}));
  e.touch(1, "partial_val", sat_product({rows, chunks, 4}));
  e.touch(2, "partial_idx", sat_product({rows, chunks, 4}));
  return Status::ok_status();
}

Status argmax_reduce_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 3), chunks = size_i32(l, 4);
  if (rows == 0) return Status::ok_status();
  e.touch(0, "partial_val", sat_product({rows, chunks, 4}));
  e.touch(1, "partial_idx", sat_product({rows, chunks, 4}));
  e.touch(2, "next_token", sat_mul(rows, 8));
  return Status::ok_status();
}

}  // namespace kern::cpu
