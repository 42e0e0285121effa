// Decode attention prologue in one launch (docs/kernels.md §12): Qwen3's
// per-head q/k RMSNorm, neox RoPE and the paged KV-cache write, replacing
// head_rmsnorm (x2) + rope + reshape_and_cache (u8 rope_flags: bit 0 neox
// pairs (i, i + D/2), else interleaved (2i, 2i + 1), as rope; bit 1 no q/k
// norm, for families without one: RoPE + the cache write). Numerics are the unfused
// chain's: the normalised head is rounded to bf16 (head_rmsnorm's store),
// rotated in f32 and rounded (rope's store); k is then stored as
// bf16(k' / k_scale) and v as bf16(v / v_scale) (reshape_and_cache).
//
// Launch: grid [ceil((H + 2 KV) / 4), T, 1], block [128, 1, 1]: one warp per
// head item of a token (q heads, then k heads, then v heads). A q/k warp
// keeps the normalised head in shared memory (D <= 512) for the rotation's
// partner element (kern_qk_norm_rope::norm_rope_head, shared with the decode
// attention kernels that fold this prologue in, docs/kernels.md §13a). Bytes moved per token: 2 (H + 2 KV) D (qkv read) +
// 2 H D (q written) + 4 KV D (cache written) + 4 D (cos/sin) + 4 D (norm weights).
#include "kern_cuda_common.cuh"
#include "qk_norm_rope.cuh"

using namespace kern_cuda;

namespace {

constexpr int kWarps = 4;
constexpr int kMaxHeadDim = 512;

}  // namespace

/// kern_qk_norm_rope_cache_bf16(in bf16 qkv[T, qkv_stride], in bf16 q_norm_weight[D],
///   in bf16 k_norm_weight[D], in i64 positions[T], in f32 cos_sin_cache[max_pos, D],
///   out bf16 q_out[T, H*D], inout ptr kv_cache, in i64 slot_mapping[T], in f32 k_scale[1],
///   in f32 v_scale[1], i32 num_tokens, i32 num_heads, i32 num_kv_heads, i32 head_dim,
///   i32 qkv_stride, i64 page_stride, f32 eps, u8 rope_flags)
extern "C" __global__ void __launch_bounds__(128) kern_qk_norm_rope_cache_bf16(
    const __nv_bfloat16* __restrict__ qkv, const __nv_bfloat16* __restrict__ q_norm_weight,
    const __nv_bfloat16* __restrict__ k_norm_weight, const int64_t* __restrict__ positions,
    const float* __restrict__ cos_sin_cache, __nv_bfloat16* __restrict__ q_out, __nv_bfloat16* kv_cache,
    const int64_t* __restrict__ slot_mapping, const float* __restrict__ k_scale, const float* __restrict__ v_scale,
    int num_tokens, int num_heads, int num_kv_heads, int head_dim, int qkv_stride, int64_t page_stride,
    float eps, unsigned char rope_flags) {
  __shared__ float head_buf[kWarps][kMaxHeadDim];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int item = blockIdx.x * kWarps + warp;
  const int t = blockIdx.y;
  pdl_launch_dependents();
  if (t >= num_tokens || item >= num_heads + 2 * num_kv_heads || head_dim <= 0 || head_dim > kMaxHeadDim ||
      (head_dim & 1) != 0)
    return;
  pdl_wait();  // qkv, positions and slots come from earlier launches
  const int64_t slot = slot_mapping[t];
  const __nv_bfloat16* row = qkv + static_cast<int64_t>(t) * qkv_stride;
  const int kv_items = num_heads + num_kv_heads;
  if (item >= kv_items) {  // v head: scaled copy into the cache
    if (slot < 0) return;
    const int h = item - kv_items;
    const __nv_bfloat16* src = row + static_cast<int64_t>(kv_items + h) * head_dim;
    __nv_bfloat16* dst = kv_cache + (slot / 16) * page_stride + ((slot % 16) * num_kv_heads + h) * 2 * head_dim + head_dim;
    const float vs = *v_scale;
    for (int i = lane; i < head_dim; i += 32) dst[i] = f32_to_bf16(bf16_to_f32(src[i]) / vs);
    return;
  }
  const bool is_q = item < num_heads;
  const int h = is_q ? item : item - num_heads;
  if (!is_q && slot < 0) return;
  const __nv_bfloat16* src = row + static_cast<int64_t>(item) * head_dim;  // k heads follow the q heads
  float* buf = head_buf[warp];
  kern_qk_norm_rope::norm_rope_head(src, kern_qk_norm_rope::norm_weight(is_q ? q_norm_weight : k_norm_weight, rope_flags),
                                    cos_sin_cache + positions[t] * head_dim, head_dim, eps,
                                    (rope_flags & kern_qk_norm_rope::kRopeNeox) != 0, buf, lane);
  if (is_q) {
    __nv_bfloat16* dst = q_out + (static_cast<int64_t>(t) * num_heads + h) * head_dim;
    for (int i = lane; i < head_dim; i += 32) dst[i] = f32_to_bf16(buf[i]);
  } else {
    __nv_bfloat16* dst = kv_cache + (slot / 16) * page_stride + ((slot % 16) * num_kv_heads + h) * 2 * head_dim;
    const float scale = *k_scale;
    for (int i = lane; i < head_dim; i += 32) dst[i] = f32_to_bf16(buf[i] / scale);
  }
}
