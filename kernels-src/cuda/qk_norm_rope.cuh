// Qwen3's per-head q/k RMSNorm + RoPE done by one warp (docs/kernels.md §12,
// §13a): the arithmetic of kern_qk_norm_rope_cache_bf16, shared by it and by
// the decode attention kernels that take the raw qkv projection
// (kern_attention_decode_qkv_bf16, kern_attention_decode_batch_qkv_bf16), so
// the fused and the two-launch paths give the same bits. Needs
// kern_cuda_common.cuh (bf16 helpers, warp_sum) included before it.
#pragma once

namespace kern_qk_norm_rope {

/// The u8 rope_flags param of the q/k kernels (docs/kernels.md §12, §13a, §15a): bit 0 neox
/// pairs (else interleaved), bit 1 no q/k RMSNorm (the norm weights are not read).
constexpr unsigned kRopeNeox = 1, kRopeNoQkNorm = 2;

/// The q (or k) norm weight a kernel hands norm_rope_head: `w`, or null when
/// rope_flags says there is no q/k norm.
__device__ __forceinline__ const __nv_bfloat16* norm_weight(const __nv_bfloat16* w, unsigned char rope_flags) {
  return (rope_flags & kRopeNoQkNorm) != 0 ? nullptr : w;
}

/// One warp (every lane calls it): buf[0, D) = bf16(rotate(bf16(x * rsqrt(mean(x^2) + eps) * w)))
/// as f32, x the D bf16 of `src`, the rotation by the cos/sin row `cs` (neox pairs (i, i + D/2),
/// or interleaved (2i, 2i + 1) with !neox). The sum of squares is lane-strided (lane, lane + 32,
/// ...) then the xor butterfly. With `w` null (the same for every lane) there is no norm:
/// buf = bf16(rotate(x)). D even; `buf` D floats of shared memory owned by this warp.
/// Every lane's writes to buf are visible to the warp on return (__syncwarp).
__device__ __forceinline__ void norm_rope_head(const __nv_bfloat16* src, const __nv_bfloat16* w, const float* cs,
                                               int head_dim, float eps, bool neox, float* buf, int lane) {
  float ss = 0.0f;
  for (int i = lane; i < head_dim; i += 32) {
    const float x = kern_cuda::bf16_to_f32(src[i]);
    buf[i] = x;
    ss += x * x;
  }
  if (w != nullptr) {  // warp-uniform: warp_sum needs every lane
    const float inv = 1.0f / sqrtf(kern_cuda::warp_sum(ss) / static_cast<float>(head_dim) + eps);
    for (int i = lane; i < head_dim; i += 32)
      buf[i] = kern_cuda::bf16_to_f32(kern_cuda::f32_to_bf16(buf[i] * inv * kern_cuda::bf16_to_f32(w[i])));
  }
  __syncwarp();
  const int half = head_dim / 2;
  for (int i = lane; i < half; i += 32) {  // each pair is read and written by one lane
    const int i1 = neox ? i : 2 * i, i2 = neox ? i + half : 2 * i + 1;
    const float x1 = buf[i1], x2 = buf[i2], c = cs[i], s = cs[half + i];
    buf[i1] = kern_cuda::bf16_to_f32(kern_cuda::f32_to_bf16(x1 * c - x2 * s));
    buf[i2] = kern_cuda::bf16_to_f32(kern_cuda::f32_to_bf16(x2 * c + x1 * s));
  }
  __syncwarp();
}

/// The prologue of a decode-attention block that reads the raw qkv row `row`
/// (`q [H*D] | k [KV*D] | v [KV*D]`) of its query, for kv head `kvh` and its
/// `group` query heads h0 = kvh * group ..: the block's warps normalise and
/// rotate the group's q heads into `q_smem` ([group][D] bf16, what
/// kern_qk_norm_rope_cache_bf16 writes to q_out), and, when `slot` is not null
/// (this block's split holds the new position), the kv head's k (normalised,
/// rotated, bf16(k' / k_scale)) and v (bf16(v / v_scale)) into the cache
/// slot `slot` ([2][D]: k then v). `bufs` holds kWarps * D floats (a row per
/// warp). Ends with a __syncthreads: q_smem and the slot are then visible to
/// every thread of the block (the slot is in global memory; only this block
/// reads it during the launch).
template <int kWarps>
__device__ __forceinline__ void qkv_prologue(const __nv_bfloat16* row, const __nv_bfloat16* q_norm_weight,
                                             const __nv_bfloat16* k_norm_weight, const float* cs, int num_heads,
                                             int num_kv_heads, int kvh, int group, int head_dim, float eps,
                                             bool neox, float k_scale, float v_scale, __nv_bfloat16* slot,
                                             __nv_bfloat16* q_smem, float* bufs) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int h0 = kvh * group;
  float* buf = bufs + warp * head_dim;
  const int items = group + (slot != nullptr ? 2 : 0);  // q heads, then k, then v
  for (int it = warp; it < items; it += kWarps) {
    if (it < group) {
      norm_rope_head(row + static_cast<int64_t>(h0 + it) * head_dim, q_norm_weight, cs, head_dim, eps, neox, buf,
                     lane);
      for (int i = lane; i < head_dim; i += 32) q_smem[it * head_dim + i] = kern_cuda::f32_to_bf16(buf[i]);
    } else if (it == group) {
      norm_rope_head(row + static_cast<int64_t>(num_heads + kvh) * head_dim, k_norm_weight, cs, head_dim, eps, neox,
                     buf, lane);
      for (int i = lane; i < head_dim; i += 32) slot[i] = kern_cuda::f32_to_bf16(buf[i] / k_scale);
    } else {
      const __nv_bfloat16* v = row + static_cast<int64_t>(num_heads + num_kv_heads + kvh) * head_dim;
      for (int i = lane; i < head_dim; i += 32)
        slot[head_dim + i] = kern_cuda::f32_to_bf16(kern_cuda::bf16_to_f32(v[i]) / v_scale);
    }
    __syncwarp();  // the next item's first loop rewrites buf
  }
  __syncthreads();
}

}  // namespace kern_qk_norm_rope
