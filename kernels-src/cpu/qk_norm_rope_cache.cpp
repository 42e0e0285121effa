// kern_qk_norm_rope_cache_bf16 (docs/kernels.md §12): per token, each q and
// k head of the fused qkv row is RMS-normalised with its weight (rounded to
// bf16; not with rope_flags bit 1: no q/k norm), rotated by RoPE (neox or
// interleaved pairs; rounded to bf16); q goes to q_out, k to its
// paged KV-cache slot as bf16(k / k_scale) and v as bf16(v / v_scale). The
// values of head_rmsnorm + rope + reshape_and_cache, in one launch.
#include <cmath>
#include <vector>

#include "common/bf16.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/kv_layout.h"
#include "kernels-src/cpu/qk_norm_rope.h"

namespace kern::cpu {

namespace {

constexpr const char* kName = "kern_qk_norm_rope_cache_bf16";
constexpr int64_t kMaxHeadDim = 512;  // the CUDA twin's shared-memory row

}  // namespace

namespace detail {

void norm_rope_head(const uint16_t* x, const uint16_t* w, const float* cs, int64_t d, float eps, bool neox,
                    float* out) {
  float ss = 0.0f;
  std::vector<float> n(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) {
    n[i] = bf16_to_f32(x[i]);
    ss += n[i] * n[i];
  }
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
  if (w != nullptr)
    for (int64_t i = 0; i < d; ++i) n[i] = round_to_bf16(n[i] * inv * bf16_to_f32(w[i]));
  const int64_t half = d / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i1 = neox ? i : 2 * i, i2 = neox ? i + half : 2 * i + 1;
    const float x1 = n[i1], x2 = n[i2], c = cs[i], s = cs[half + i];
    out[i1] = round_to_bf16(x1 * c - x2 * s);
    out[i2] = round_to_bf16(x2 * c + x1 * s);
  }
}

}  // namespace detail

namespace {

/// The launch's params, read and shape-checked.
struct QkLaunch {
  int64_t tokens = 0, heads = 0, kv_heads = 0, d = 0, stride = 0, page_stride = 0;
  float eps = 0.0f;
  bool neox = false;
  bool work = false;  ///< something to compute
  bool kv = false;    ///< k and v go to the cache
  const uint16_t *qkv = nullptr, *qw = nullptr, *kw = nullptr;
  const int64_t* positions = nullptr;
  const int64_t* slots = nullptr;
  const float *cos_sin = nullptr, *k_scale = nullptr, *v_scale = nullptr;
  uint16_t *q_out = nullptr, *cache = nullptr;
};

/// Every data-chosen access (positions into cos_sin_cache, slots into the
/// KV cache) checked before the first write.
Status check_data(const CpuLaunch& l, const QkLaunch& q) {
  using namespace detail;
  for (int64_t t = 0; t < q.tokens; ++t) {
    if (q.positions[t] < 0) {
      return data_error(kName, "positions[" + std::to_string(t) + "] is " + std::to_string(q.positions[t]) +
                                   "; must be >= 0");
    }
    const uint64_t row_end =
        sat_mul(sat_add(static_cast<uint64_t>(q.positions[t]), 1), static_cast<uint64_t>(q.d));
    KERN_RETURN_IF_ERROR(check_data_extent(l, kName, 4, "cos_sin_cache", sat_mul(row_end, 4),
                                           "positions[" + std::to_string(t) + "] = " + std::to_string(q.positions[t])));
    const int64_t slot = q.slots[t];
    if (slot < 0 || !q.kv) continue;
    const uint64_t end =
        sat_add(sat_mul(static_cast<uint64_t>(slot / kPageSlots), static_cast<uint64_t>(q.page_stride)),
                static_cast<uint64_t>(kv_slot_offset(slot % kPageSlots, q.kv_heads - 1, 0, q.kv_heads, q.d) + 2 * q.d));
    KERN_RETURN_IF_ERROR(check_data_extent(l, kName, 6, "kv_cache", sat_mul(end, 2),
                                           "slot_mapping[" + std::to_string(t) + "] = " + std::to_string(slot)));
  }
  return Status::ok_status();
}

/// q heads to q_out; k and v heads to their cache slots.
void compute(const QkLaunch& q) {
  using namespace detail;
  const int64_t d = q.d;
  std::vector<float> head(static_cast<size_t>(d));
  for (int64_t t = 0; t < q.tokens; ++t) {
    const uint16_t* row = q.qkv + t * q.stride;
    const float* cs = q.cos_sin + q.positions[t] * d;
    for (int64_t h = 0; h < q.heads; ++h) {
      norm_rope_head(row + h * d, q.qw, cs, d, q.eps, q.neox, head.data());
      for (int64_t i = 0; i < d; ++i) q.q_out[(t * q.heads + h) * d + i] = f32_to_bf16(head[i]);
    }
    const int64_t slot = q.slots[t];
    if (slot < 0 || !q.kv) continue;  // vLLM's padding convention: skip the token
    for (int64_t h = 0; h < q.kv_heads; ++h) {
      uint16_t* dst = q.cache + kv_slot_offset(slot, h, q.page_stride, q.kv_heads, d);
      norm_rope_head(row + (q.heads + h) * d, q.kw, cs, d, q.eps, q.neox, head.data());
      for (int64_t i = 0; i < d; ++i) dst[i] = f32_to_bf16(head[i] / *q.k_scale);
      const uint16_t* v = row + (q.heads + q.kv_heads + h) * d;
      for (int64_t i = 0; i < d; ++i) dst[d + i] = f32_to_bf16(bf16_to_f32(v[i]) / *q.v_scale);
    }
  }
}

}  // namespace

Status qk_norm_rope_cache_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 18));
  QkLaunch q;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 10, "num_tokens", 0, q.tokens));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 11, "num_heads", 0, q.heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 12, "num_kv_heads", 0, q.kv_heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 13, "head_dim", 0, q.d));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 14, "qkv_stride", 0, q.stride));
  KERN_RETURN_IF_ERROR(read_i64(l, kName, 15, "page_stride", 0, q.page_stride));
  KERN_RETURN_IF_ERROR(read_f32(l, kName, 16, "eps", true, q.eps));
  const uint8_t flags = l.arg<uint8_t>(17);
  if ((flags & ~kRopeFlagsKnown) != 0)
    return launch_error(kName, "param 17 (rope_flags) is " + std::to_string(flags) + "; must be 0 to 3 (bit 0 neox, "
                                                                                       "bit 1 no q/k norm)");
  q.neox = (flags & kRopeNeox) != 0;
  const bool norm = (flags & kRopeNoQkNorm) == 0;
  if (q.d % 2 != 0 || q.d > kMaxHeadDim) {
    return launch_error(kName, "param 13 (head_dim) is " + std::to_string(q.d) + "; must be even and <= " +
                                   std::to_string(kMaxHeadDim));
  }
  const int64_t items = q.heads + 2 * q.kv_heads;
  KERN_RETURN_IF_ERROR(
      check_at_least(kName, 14, "qkv_stride", q.stride, items * q.d, "(num_heads + 2 num_kv_heads) * head_dim"));
  q.work = q.tokens > 0 && items > 0 && q.d > 0;
  q.kv = q.work && q.kv_heads > 0;
  if (q.kv) {
    KERN_RETURN_IF_ERROR(check_at_least(kName, 15, "page_stride", q.page_stride, kv_layer_page_elems(q.kv_heads, q.d),
                                        "16 * num_kv_heads * 2 * head_dim"));
  }
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "qkv", q.work, q.qkv));
  if (norm) {  // without q/k norm the weights are not read (qw, kw null: norm_rope_head skips the norm)
    KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "q_norm_weight", q.work && q.heads > 0, q.qw));
    KERN_RETURN_IF_ERROR(read_ptr(l, kName, 2, "k_norm_weight", q.kv, q.kw));
  }
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 3, "positions", q.work, q.positions));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 4, "cos_sin_cache", q.work, q.cos_sin));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 5, "q_out", q.work && q.heads > 0, q.q_out));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 6, "kv_cache", q.kv, q.cache));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 7, "slot_mapping", q.work, q.slots));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 8, "k_scale", q.kv, q.k_scale));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 9, "v_scale", q.kv, q.v_scale));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, (items + 3) / 4, "one warp per head item, 4 per block"));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 1, q.tokens, "grid.y: one per token"));
  if (l.block[0] != 128) {
    return launch_error(kName, "block.x is " + std::to_string(l.block[0]) + "; must be 128 (4 warps)");
  }
  if (!q.work) return Status::ok_status();
  KERN_RETURN_IF_ERROR(check_data(l, q));
  compute(q);
  return Status::ok_status();
}

Status qk_norm_rope_cache_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  if (l.num_args < 18) return Status::ok_status();  // the kernel reports the param count
  const uint64_t tokens = size_i32(l, 10), heads = size_i32(l, 11), kv_heads = size_i32(l, 12);
  const uint64_t d = size_i32(l, 13), stride = size_i32(l, 14);
  if (tokens == 0 || d == 0 || heads + kv_heads == 0) return Status::ok_status();
  const bool norm = (l.arg<uint8_t>(17) & kRopeNoQkNorm) == 0;  // else the norm weights are not read
  e.touch(0, "qkv", strided_bytes(tokens, stride, sat_mul(heads + 2 * kv_heads, d), 2));
  if (heads > 0) {
    if (norm) e.touch(1, "q_norm_weight", sat_mul(d, 2));
    e.touch(5, "q_out", sat_product({tokens, heads, d, 2}));
  }
  if (kv_heads > 0) {
    if (norm) e.touch(2, "k_norm_weight", sat_mul(d, 2));
    e.touch(8, "k_scale", 4);
    e.touch(9, "v_scale", 4);
  }
  e.touch(3, "positions", sat_mul(tokens, 8));
  e.touch(7, "slot_mapping", sat_mul(tokens, 8));
  // cos_sin_cache (4) and kv_cache (6): rows / slots chosen by data, checked by the kernel.
  return Status::ok_status();
}

}  // namespace kern::cpu
