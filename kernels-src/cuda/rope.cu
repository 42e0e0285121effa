// Rotary position embedding, in place on q and k (docs/kernels.md §5).
// Cache row p = cos[0..D/2) | sin[0..D/2) in f32. Neox (is_neox = 1) pairs
// (x[i], x[i + D/2]); interleaved (0, GPT-J) pairs (x[2i], x[2i + 1]), both
// with cos/sin index i: x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin, f32
// math, one RNE rounding per stored element.
//
// Launch: grid [T, 1, 1], block [128, 1, 1]; block t rotates every q and k
// head of token t. Neox work item = (head, 8 consecutive i): one 16-byte
// load of each half of the head plus 2 x 32 bytes of cos/sin (L1-resident:
// shared by all heads of the token). Qwen3 (32 + 8 heads, D = 128):
// 320 items over 128 threads.
// Bytes moved: 8 T + 4 D T (cos/sin row) + 4 D T (H + KV) (q, k read + written).
#include "kern_cuda_common.cuh"

using namespace kern_cuda;

namespace {

__device__ __forceinline__ void rotate(float& x1, float& x2, float c, float s) {
  const float a = x1 * c - x2 * s;
  const float b = x2 * c + x1 * s;
  x1 = a;
  x2 = b;
}

/// Rotates 8 pairs of one head of a token: work item `item` = (head
/// item / items_per_head, pairs [8 (item % items_per_head), +8)); heads are
/// D elements apart from `x`.
__device__ void rope_neox_vec(__nv_bfloat16* x, int half, const float* cs, int item,
                              int items_per_head) {
  const int h = item / items_per_head;
  const int i0 = (item - h * items_per_head) * 8;
  __nv_bfloat16* head = x + static_cast<int64_t>(h) * 2 * half;
  __nv_bfloat16* lo = head + i0;
  __nv_bfloat16* hi = head + half + i0;
  float a[8], b[8];
  load8(lo, a);
  load8(hi, b);
  const float4* c4 = reinterpret_cast<const float4*>(cs + i0);
  const float4* s4 = reinterpret_cast<const float4*>(cs + half + i0);
  const float4 c0 = c4[0], c1 = c4[1], s0 = s4[0], s1 = s4[1];
  const float c[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
  const float s[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
#pragma unroll
  for (int j = 0; j < 8; ++j) rotate(a[j], b[j], c[j], s[j]);
  store8(lo, a);
  store8(hi, b);
}

/// Scalar path: one pair per work item; handles any D and both modes.
__device__ void rope_pair(__nv_bfloat16* x, int half, const float* cs, int item, bool neox) {
  const int h = item / half;
  const int i = item - h * half;
  __nv_bfloat16* head = x + static_cast<int64_t>(h) * 2 * half;
  const int i1 = neox ? i : 2 * i;
  const int i2 = neox ? i + half : 2 * i + 1;
  float x1 = bf16_to_f32(head[i1]);
  float x2 = bf16_to_f32(head[i2]);
  rotate(x1, x2, cs[i], cs[half + i]);
  head[i1] = f32_to_bf16(x1);
  head[i2] = f32_to_bf16(x2);
}

}  // namespace

/// kern_rope_bf16(in i64 positions[T], inout bf16 q, inout bf16 k,
///                in f32 cos_sin_cache[max_pos, D], i32 num_tokens, i32 num_q_heads,
///                i32 num_k_heads, i32 head_dim, i32 q_stride, i32 k_stride, u8 is_neox)
/// Strides are elements between tokens; heads of a token are contiguous.
extern "C" __global__ void __launch_bounds__(128) kern_rope_bf16(
    const int64_t* __restrict__ positions, __nv_bfloat16* __restrict__ q, __nv_bfloat16* __restrict__ k,
    const float* __restrict__ cos_sin_cache, int num_tokens, int num_q_heads, int num_k_heads,
    int head_dim, int q_stride, int k_stride, uint8_t is_neox) {
  const int t = blockIdx.x;
  if (t >= num_tokens || head_dim < 2 || (head_dim & 1)) return;
  const int half = head_dim >> 1;
  const float* cs = cos_sin_cache + positions[t] * head_dim;
  __nv_bfloat16* qt = q + static_cast<int64_t>(t) * q_stride;
  __nv_bfloat16* kt = k + static_cast<int64_t>(t) * k_stride;
  const bool neox = is_neox != 0;
  // 16-byte halves need D/2 % 8 == 0 and aligned rows; cos/sin rows then are 32-byte aligned
  // whenever the cache base is (the runtime aligns allocations to 256 B).
  const bool vec = neox && (half & 7) == 0 && aligned_to(qt, 16) && aligned_to(kt, 16) &&
                   aligned_to(cs, 16);
  if (vec) {
    const int per_head = half >> 3;
    const int q_items = num_q_heads * per_head;
    const int total = q_items + num_k_heads * per_head;
    for (int item = threadIdx.x; item < total; item += blockDim.x) {
      if (item < q_items) rope_neox_vec(qt, half, cs, item, per_head);
      else rope_neox_vec(kt, half, cs, item - q_items, per_head);
    }
    return;
  }
  const int q_items = num_q_heads * half;
  const int total = q_items + num_k_heads * half;
  for (int item = threadIdx.x; item < total; item += blockDim.x) {
    if (item < q_items) rope_pair(qt, half, cs, item, neox);
    else rope_pair(kt, half, cs, item - q_items, neox);
  }
}
