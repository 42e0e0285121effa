// Greedy sampling as a two-pass row argmax (docs/kernels.md §9). NaN never
// wins; ties go to the smallest index; the pair order (value, index) is
// "a beats b iff a.v > b.v or (a.v == b.v and a.i < b.i)", starting from
// (-inf, INT32_MAX), so a chunk of only NaN (or an empty chunk) yields
// (-inf, INT32_MAX) and a chunk of only -inf yields its first index.
#include <math_constants.h>

#include <climits>

#include "argmax_best.cuh"
#include "kern_cuda_common.cuh"

using namespace kern_cuda;
using namespace kern_argmax;

/// kern_argmax_partial_bf16(in bf16 logits[rows, V], out f32 partial_val[rows, C],
///                          out i32 partial_idx[rows, C], i32 rows, i32 vocab, i32 num_chunks)
/// Chunk c of a row covers [c L, min((c+1) L, V)), L = ceil(V / C).
/// Launch: grid [C = 64, rows, 1], block [256, 1, 1]; 16-byte loads between a
/// scalar head (up to the first 16-byte boundary) and a scalar tail.
/// Bytes moved: 2 rows V (logits) + 8 rows C (partials).
/// (V = 151,936: 2374 elements = ~297 vectors per chunk, 64 blocks per row.)
extern "C" __global__ void __launch_bounds__(256) kern_argmax_partial_bf16(
    const __nv_bfloat16* __restrict__ logits, float* __restrict__ partial_val,
    int* __restrict__ partial_idx, int rows, int vocab, int num_chunks) {
  const int c = blockIdx.x, r = blockIdx.y;
  if (c >= num_chunks || r >= rows) return;
  const int len = vocab > 0 ? (vocab + num_chunks - 1) / num_chunks : 0;
  const int begin = min(c * len, max(vocab, 0));
  const int end = min(begin + len, max(vocab, 0));
  const __nv_bfloat16* row = logits + static_cast<int64_t>(r) * vocab;
  Best b{-CUDART_INF_F, INT_MAX};
  // Elements [begin, vbeg) and [vend, end) scalar; [vbeg, vend) as 8-element vectors.
  const int mis = static_cast<int>((reinterpret_cast<uintptr_t>(row + begin) & 15) >> 1);
  int vbeg = begin + (mis ? 8 - mis : 0);
  if (((reinterpret_cast<uintptr_t>(row)) & 1) != 0 || vbeg > end) vbeg = end;
  const int vend = vbeg + ((end - vbeg) & ~7);
  for (int i = begin + threadIdx.x; i < vbeg; i += blockDim.x) consider(b, bf16_to_f32(row[i]), i);
  const __nv_bfloat16* vec = row + vbeg;
  const int nvec = (vend - vbeg) >> 3;
  for (int k = threadIdx.x; k < nvec; k += blockDim.x) {
    float f[8];
    load8(vec + 8 * k, f);
    const int base = vbeg + 8 * k;
#pragma unroll
    for (int j = 0; j < 8; ++j) consider(b, f[j], base + j);
  }
  for (int i = vend + threadIdx.x; i < end; i += blockDim.x) consider(b, bf16_to_f32(row[i]), i);
  b = block_best(b);
  if (threadIdx.x == 0) {
    partial_val[static_cast<int64_t>(r) * num_chunks + c] = b.v;
    partial_idx[static_cast<int64_t>(r) * num_chunks + c] = b.i;
  }
}

/// kern_argmax_reduce(in f32 partial_val[rows, C], in i32 partial_idx[rows, C],
///                    out i64 next_token[rows], i32 rows, i32 num_chunks)
/// Launch: grid [rows, 1, 1], block [B, 1, 1] with B any multiple of 32 up
/// to 1024 (the unfused argmax: 64 for its 64 chunks; the fused lm_head's
/// ceil(V / 8) tile partials: 1024). Thread t takes the pairs t, t + B, ...,
/// kUnroll of them loaded before any is compared (independent loads in
/// flight instead of one round trip per pair), then the block's best by
/// shuffles. The winner does not depend on the order pairs are compared in
/// (a total order: greater value, then smaller index; NaN never wins), so it
/// equals the cpu twin's serial scan bit for bit.
/// Bytes moved: 8 rows C + 8 rows.
extern "C" __global__ void __launch_bounds__(1024) kern_argmax_reduce(
    const float* __restrict__ partial_val, const int* __restrict__ partial_idx,
    int64_t* __restrict__ next_token, int rows, int num_chunks) {
  constexpr int kUnroll = 8;
  const int r = blockIdx.x;
  if (r >= rows) return;
  Best b{-CUDART_INF_F, INT_MAX};
  const float* pv = partial_val + static_cast<int64_t>(r) * num_chunks;
  const int* pi = partial_idx + static_cast<int64_t>(r) * num_chunks;
  const int stride = blockDim.x;
  int c = threadIdx.x;
  for (; c + (kUnroll - 1) * stride < num_chunks; c += kUnroll * stride) {
    float v[kUnroll];
    int ix[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      v[u] = pv[c + u * stride];
      ix[u] = pi[c + u * stride];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) consider(b, v[u], ix[u]);
  }
  for (; c < num_chunks; c += stride) consider(b, pv[c], pi[c]);
  b = block_best(b);
  if (threadIdx.x == 0) next_token[r] = b.i;
}
