// KV cache write (docs/kernels.md §7, vLLM's reshape_and_cache): copies each
// token's k and v heads into its paged slot, storing bf16(x / scale).
// Layer layout [page][16 slots][KV heads][2 (k, v)][D]; slot s of the layer
// starts at element (s / 16) * page_stride + ((s % 16) * KV + h) * 2 * D.
// A negative slot skips the token (vLLM's padding convention).
//
// Launch: grid [T, 1, 1], block [128, 1, 1]; block t writes token t with
// 16-byte vectors (KV = 8, D = 128: 256 vectors, 2 per thread).
// Bytes moved: 8 T + 8 + 8 T KV D (k, v read; 2 D per head each written).
#include "kern_cuda_common.cuh"

using namespace kern_cuda;

/// kern_reshape_and_cache_bf16(in bf16 k, in bf16 v, inout ptr kv_cache (layer base),
///     in i64 slot_mapping[T], in f32 k_scale[1], in f32 v_scale[1], i32 num_tokens,
///     i32 num_kv_heads, i32 head_dim, i32 k_stride, i32 v_stride, i64 page_stride)
/// Strides in elements; heads of a token are contiguous in k and v.
extern "C" __global__ void __launch_bounds__(128) kern_reshape_and_cache_bf16(
    const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
    __nv_bfloat16* __restrict__ kv_cache, const int64_t* __restrict__ slot_mapping,
    const float* __restrict__ k_scale, const float* __restrict__ v_scale, int num_tokens,
    int num_kv_heads, int head_dim, int k_stride, int v_stride, long long page_stride) {
  const int t = blockIdx.x;
  if (t >= num_tokens || head_dim <= 0) return;
  const int64_t slot = slot_mapping[t];
  if (slot < 0) return;
  const float ks = *k_scale;
  const float vs = *v_scale;
  const __nv_bfloat16* kt = k + static_cast<int64_t>(t) * k_stride;
  const __nv_bfloat16* vt = v + static_cast<int64_t>(t) * v_stride;
  __nv_bfloat16* dst = kv_cache + (slot / 16) * page_stride +
                       (slot % 16) * static_cast<int64_t>(num_kv_heads) * 2 * head_dim;
  if ((head_dim & 7) == 0 && aligned_to(kt, 16) && aligned_to(vt, 16) && aligned_to(dst, 16)) {
    const int per_head = head_dim >> 3;
    const int total = num_kv_heads * per_head;  // vectors of k (and as many of v)
    for (int item = threadIdx.x; item < 2 * total; item += blockDim.x) {
      const bool is_v = item >= total;
      const int it = is_v ? item - total : item;
      const int h = it / per_head;
      const int c = it - h * per_head;
      const __nv_bfloat16* src = (is_v ? vt : kt) + h * head_dim;
      float x[8];
      load8(src + 8 * c, x);
      const float scale = is_v ? vs : ks;
#pragma unroll
      for (int j = 0; j < 8; ++j) x[j] = x[j] / scale;
      store8(dst + (2 * h + (is_v ? 1 : 0)) * head_dim + 8 * c, x);
    }
    return;
  }
  const int total = num_kv_heads * head_dim;
  for (int item = threadIdx.x; item < 2 * total; item += blockDim.x) {
    const bool is_v = item >= total;
    const int it = is_v ? item - total : item;
    const int h = it / head_dim;
    const int d = it - h * head_dim;
    const float x = bf16_to_f32((is_v ? vt : kt)[h * head_dim + d]);
    dst[(2 * h + (is_v ? 1 : 0)) * head_dim + d] = f32_to_bf16(x / (is_v ? vs : ks));
  }
}
