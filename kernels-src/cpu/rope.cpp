// kern_rope_bf16 (docs/kernels.md §5): rotary position embedding applied to q
// and k in place. Cache row p of cos_sin_cache [max_pos, head_dim] holds
// cos[0..D/2) | sin[0..D/2). Pair i (i < D/2) is (x[i], x[i + D/2]) in neox
// mode and (x[2i], x[2i + 1]) in interleaved (GPT-J) mode; both use cos[i],
// sin[i]: x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin.
//
// A negative position is rejected, and so is a position whose cache row lies
// beyond the buffer the device gave (CpuLaunch::avail; the ABI does not
// carry max_pos), before anything is written.

#include "common/bf16.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {

constexpr const char* kName = "kern_rope_bf16";

/// Rotates `heads` heads of one token row (`row`, head h at h * head_dim).
void rotate_heads(uint16_t* row, int64_t heads, int64_t head_dim, const float* cos,
                  const float* sin, bool neox) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h) {
    uint16_t* x = row + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t i1 = neox ? i : 2 * i;
      const int64_t i2 = neox ? i + half : 2 * i + 1;
      const float x1 = bf16_to_f32(x[i1]);
      const float x2 = bf16_to_f32(x[i2]);
      x[i1] = f32_to_bf16(x1 * cos[i] - x2 * sin[i]);
      x[i2] = f32_to_bf16(x2 * cos[i] + x1 * sin[i]);
    }
  }
}

}  // namespace

Status rope_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 11));
  int64_t tokens = 0, q_heads = 0, k_heads = 0, head_dim = 0, q_stride = 0, k_stride = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 4, "num_tokens", 0, tokens));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 5, "num_q_heads", 0, q_heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 6, "num_k_heads", 0, k_heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 7, "head_dim", 0, head_dim));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 8, "q_stride", 0, q_stride));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 9, "k_stride", 0, k_stride));
  const uint8_t is_neox = l.arg<uint8_t>(10);
  if (is_neox > 1) {
    return launch_error(kName, "param 10 (is_neox) is " + std::to_string(is_neox) +
                                   "; must be 0 or 1");
  }
  if (head_dim % 2 != 0) {
    return launch_error(kName, "param 7 (head_dim) is " + std::to_string(head_dim) +
                                   "; must be even (rotation pairs)");
  }
  KERN_RETURN_IF_ERROR(check_at_least(kName, 8, "q_stride", q_stride, q_heads * head_dim,
                                      "num_q_heads * head_dim"));
  KERN_RETURN_IF_ERROR(check_at_least(kName, 9, "k_stride", k_stride, k_heads * head_dim,
                                      "num_k_heads * head_dim"));
  const bool work = tokens > 0 && head_dim > 0 && q_heads + k_heads > 0;
  const int64_t* positions = nullptr;
  uint16_t* q = nullptr;
  uint16_t* k = nullptr;
  const float* cache = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "positions", work, positions));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "q", work && q_heads > 0, q));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 2, "k", work && k_heads > 0, k));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 3, "cos_sin_cache", work, cache));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, tokens, "one block per token"));
  if (!work) return Status::ok_status();

  for (int64_t t = 0; t < tokens; ++t) {  // all checks before the first write
    if (positions[t] < 0) {
      return data_error(kName, "positions[" + std::to_string(t) + "] is " +
                                   std::to_string(positions[t]) + "; must be >= 0");
    }
    const uint64_t row_end = sat_mul(sat_add(static_cast<uint64_t>(positions[t]), 1), static_cast<uint64_t>(head_dim));
    KERN_RETURN_IF_ERROR(check_data_extent(l, kName, 3, "cos_sin_cache", sat_mul(row_end, 4),
                                           "positions[" + std::to_string(t) + "] = " +
                                               std::to_string(positions[t])));
  }
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t p = positions[t];
    const float* cos = cache + p * head_dim;
    const float* sin = cos + head_dim / 2;
    if (q_heads > 0) rotate_heads(q + t * q_stride, q_heads, head_dim, cos, sin, is_neox == 1);
    if (k_heads > 0) rotate_heads(k + t * k_stride, k_heads, head_dim, cos, sin, is_neox == 1);
  }
  return Status::ok_status();
}

Status rope_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t tokens = size_i32(l, 4), q_heads = size_i32(l, 5), k_heads = size_i32(l, 6);
  const uint64_t head_dim = size_i32(l, 7);
  if (tokens == 0 || head_dim == 0 || q_heads + k_heads == 0) return Status::ok_status();
  e.touch(0, "positions", sat_mul(tokens, 8));
  e.touch(1, "q", strided_bytes(tokens, size_i32(l, 8), sat_mul(q_heads, head_dim), 2));
  e.touch(2, "k", strided_bytes(tokens, size_i32(l, 9), sat_mul(k_heads, head_dim), 2));
  // Row 0 at least; the rows the positions select are checked by the kernel.
  e.touch(3, "cos_sin_cache", sat_mul(head_dim, 4));
  return Status::ok_status();
}

}  // namespace kern::cpu
