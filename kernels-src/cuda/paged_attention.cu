// Paged attention over the bf16 KV cache (docs/kernels.md §8): decode as
// split-KV partial + reduce, prefill as one kernel, and the non-causal
// variant of prefill (speculative draft). Causal except that one, GQA (query head h
// reads kv head h / (H / KV)), f32 online softmax of scale * k_scale * q.k,
// v multiplied by v_scale.
//
// Query i (of q_len = cu_seqlens_q[1] - cu_seqlens_q[0]) sits at position
// ctx - q_len + i (ctx = seq_lens[0]) and attends to cache positions
// [0, ctx - q_len + i]. Cache position p lives in page block_table[p / 16],
// slot p % 16: element page * page_stride + ((p % 16) * KV + kvh) * 2 D (+ D for v).
//
// One block of 4 warps handles one (head, query[, split]). Each warp walks
// every 4th position of the range: a lane holds D / 32 contiguous dims of q,
// of the k/v row it reads (one 8-byte load each for D = 128) and of its
// running output; the score is a warp-shuffle sum. The 4 warps' (max, sum, o)
// are merged through shared memory at the end.
#include <math_constants.h>

#include "kern_cuda_common.cuh"
#include "qk_norm_rope.cuh"

using namespace kern_cuda;

namespace {

constexpr int kWarps = 4;        // block [128, 1, 1]
constexpr int kMaxHeadDim = 512;  // the strided fallback's limit (16 dims per lane)

/// Loads kEpl contiguous bf16 as f32 (kEpl in {2, 4, 8}: one 4/8/16-byte load).
template <int kEpl>
__device__ __forceinline__ void load_contig(const __nv_bfloat16* p, float out[kEpl]) {
  if constexpr (kEpl == 2) {
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
    out[0] = f.x;
    out[1] = f.y;
  } else if constexpr (kEpl == 4) {
    load4(p, out);
  } else {
    load8(p, out);
  }
}

/// Loads this lane's dims of a head row: contiguous [lane*kEpl, +kEpl) when
/// kContig (D == 32 kEpl), else strided lane + 32 j (zero past D).
template <int kEpl, bool kContig>
__device__ __forceinline__ void load_lane(const __nv_bfloat16* row, int lane, int head_dim,
                                          float out[kEpl]) {
  if constexpr (kContig) {
    load_contig<kEpl>(row + lane * kEpl, out);
  } else {
#pragma unroll
    for (int j = 0; j < kEpl; ++j) {
      const int d = lane + 32 * j;
      out[j] = d < head_dim ? bf16_to_f32(row[d]) : 0.0f;
    }
  }
}

template <int kEpl, bool kContig>
__device__ __forceinline__ int lane_dim(int lane, int j) {
  return kContig ? lane * kEpl + j : lane + 32 * j;
}

/// Shared state of one block: each warp's partial softmax, then the merged one.
struct MergeSmem {
  float m[kWarps];
  float l[kWarps];
  float o[kWarps][kMaxHeadDim];
};

/// The block merge of the kWarps warps' softmax states in smem.m / smem.l
/// (read after the barrier that published them): M = max_w m_w, the
/// weights wt[w] = exp(m_w - M) (all 0 when every warp's range was empty)
/// and L = sum_w wt[w] l_w. Returns (M, L).
__device__ __forceinline__ float2 merge_weights(const MergeSmem& smem, float (&wt)[kWarps]) {
  float mm = -CUDART_INF_F;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) mm = fmaxf(mm, smem.m[w]);
  float ll = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    wt[w] = mm == -CUDART_INF_F ? 0.0f : __expf(smem.m[w] - mm);
    ll += wt[w] * smem.l[w];
  }
  return make_float2(mm, ll);
}

/// Attends query row `q` (head dims) to cache positions [begin, end) and
/// leaves the block-merged unnormalised result in smem: returns (m, l) to
/// every thread and o[d] in smem.o[0][d] (valid after the final barrier).
/// Empty range: m = -inf, l = 0, o = 0.
template <int kEpl, bool kContig>
__device__ float2 attend_range(MergeSmem& smem, const __nv_bfloat16* __restrict__ q,
                               const __nv_bfloat16* __restrict__ kv_layer,
                               const int* __restrict__ block_table, int kvh, int num_kv_heads,
                               int head_dim, int64_t page_stride, float score_scale, float v_scale,
                               int begin, int end) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  float qf[kEpl];
  load_lane<kEpl, kContig>(q, lane, head_dim, qf);
  float m = -CUDART_INF_F;
  float l = 0.0f;
  float o[kEpl];
#pragma unroll
  for (int j = 0; j < kEpl; ++j) o[j] = 0.0f;
  const int64_t head_off = static_cast<int64_t>(kvh) * 2 * head_dim;
  const int64_t slot_elems = static_cast<int64_t>(num_kv_heads) * 2 * head_dim;
#pragma unroll 2
  for (int p = begin + warp; p < end; p += kWarps) {
    const int64_t page = block_table[p >> 4];
    const __nv_bfloat16* krow = kv_layer + page * page_stride + (p & 15) * slot_elems + head_off;
    float kf[kEpl], vf[kEpl];
    load_lane<kEpl, kContig>(krow, lane, head_dim, kf);
    load_lane<kEpl, kContig>(krow + head_dim, lane, head_dim, vf);
    float dot = 0.0f;
#pragma unroll
    for (int j = 0; j < kEpl; ++j) dot += qf[j] * kf[j];
    const float s = warp_sum(dot) * score_scale;
    const float m_new = fmaxf(m, s);
    const float alpha = __expf(m - m_new);  // m = -inf on the first position: 0
    const float w = __expf(s - m_new);
    l = l * alpha + w;
#pragma unroll
    for (int j = 0; j < kEpl; ++j) o[j] = o[j] * alpha + w * (vf[j] * v_scale);
    m = m_new;
  }
  if (lane == 0) {
    smem.m[warp] = m;
    smem.l[warp] = l;
  }
#pragma unroll
  for (int j = 0; j < kEpl; ++j) {
    const int d = lane_dim<kEpl, kContig>(lane, j);
    if (d < head_dim) smem.o[warp][d] = o[j];
  }
  __syncthreads();
  float wt[kWarps];
  const float2 ml = merge_weights(smem, wt);
  // Each thread merges its own dims d = tid, tid + 128, ... in place; no
  // other thread reads those columns, so no barrier is needed before writing.
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) acc += wt[w] * smem.o[w][d];
    smem.o[0][d] = acc;
  }
  return ml;
}

/// Geometry of one query: its causal length n_i (positions [0, n_i)).
__device__ __forceinline__ int causal_len(const int* seq_lens, const int* cu_seqlens_q, int i) {
  const int q_len = cu_seqlens_q[1] - cu_seqlens_q[0];
  return seq_lens[0] - q_len + i + 1;
}

struct AttnArgs {
  const __nv_bfloat16* q;
  const __nv_bfloat16* kv;
  const int* block_table;
  float score_scale;
  float v_scale;
  int num_heads;
  int num_kv_heads;
  int head_dim;
  int64_t page_stride;
  // Where the one-launch decode (attention_decode.cuh) finds query row i's head h:
  // q + i * q_row_stride + (h - q_head0) * head_dim (q in global memory: H * D and 0;
  // the q/k-norm prologue's group of heads in shared memory: 0 and the group's first head).
  int64_t q_row_stride = 0;
  int q_head0 = 0;
};

/// Decode split s of (head, query): writes unnormalised o and (m, l).
template <int kEpl, bool kContig>
__device__ void partial_body(MergeSmem& smem, const AttnArgs& a, int h, int i, int begin, int end,
                             float* po, float* pml) {
  const int kvh = h / (a.num_heads / a.num_kv_heads);
  const __nv_bfloat16* qrow = a.q + (static_cast<int64_t>(i) * a.num_heads + h) * a.head_dim;
  const float2 ml = attend_range<kEpl, kContig>(smem, qrow, a.kv, a.block_table, kvh, a.num_kv_heads,
                                                a.head_dim, a.page_stride, a.score_scale, a.v_scale,
                                                begin, end);
  for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x) po[d] = smem.o[0][d];
  if (threadIdx.x == 0) {
    pml[0] = ml.x;
    pml[1] = ml.y;
  }
}

/// Prefill (head, query): writes bf16(o / l) (zeros if the range is empty).
template <int kEpl, bool kContig>
__device__ void prefill_body(MergeSmem& smem, const AttnArgs& a, int h, int i, int end,
                             __nv_bfloat16* out) {
  const int kvh = h / (a.num_heads / a.num_kv_heads);
  const int64_t row = (static_cast<int64_t>(i) * a.num_heads + h) * a.head_dim;
  const float2 ml = attend_range<kEpl, kContig>(smem, a.q + row, a.kv, a.block_table, kvh,
                                                a.num_kv_heads, a.head_dim, a.page_stride,
                                                a.score_scale, a.v_scale, 0, end);
  const float inv = ml.y > 0.0f ? 1.0f / ml.y : 0.0f;
  for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x)
    out[row + d] = f32_to_bf16(smem.o[0][d] * inv);
}

/// Picks the lane layout for head_dim: contiguous vector loads for D = 64,
/// 128, 256 with suitably aligned rows; strided scalar loads for any other
/// D <= 512. D > 512 traps (a launch error, never silent garbage).
template <typename F>
__device__ void dispatch_head_dim(const AttnArgs& a, F&& f) {
  const bool rows_aligned = aligned_to(a.q, 16) && aligned_to(a.kv, 16) && (a.page_stride & 7) == 0;
  if (rows_aligned && a.head_dim == 128) f.template operator()<4, true>();
  else if (rows_aligned && a.head_dim == 64) f.template operator()<2, true>();
  else if (rows_aligned && a.head_dim == 256) f.template operator()<8, true>();
  else if (a.head_dim <= kMaxHeadDim) f.template operator()<16, false>();
  else __trap();
}

}  // namespace

// A named namespace, not the anonymous one: a function declaring __shared__
// variables in an anonymous namespace gets a path-dependent _INTERNAL_ name
// in the PTX, which would make a fatbin carrying PTX (kernels_cuda_archs
// compute_NN) depend on the build directory (see gemv.cu).
namespace kern_paged_attention {

/// The prefill and non-causal kernels (the attention interface params):
/// block (h, i) = (blockIdx.x, blockIdx.y) attends query i to cache
/// positions [0, n) and writes bf16(o / l) to out; n is the query's causal
/// length when kCausal, else seq_lens[0] (a non-causal query's range does
/// not depend on q_len: cu_seqlens_q is only the interface's).
template <bool kCausal>
__device__ __forceinline__ void prefill_attention(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ kv_cache,
    const int* __restrict__ block_table, const int* __restrict__ seq_lens,
    const int* __restrict__ cu_seqlens_q, const float* __restrict__ k_scale,
    const float* __restrict__ v_scale, __nv_bfloat16* __restrict__ out, int num_tokens, int num_heads,
    int num_kv_heads, int head_dim, long long page_stride, float scale) {
  const int h = blockIdx.x, i = blockIdx.y;
  if (h >= num_heads || i >= num_tokens || num_kv_heads <= 0 || num_heads < num_kv_heads ||
      head_dim <= 0)
    return;
  const int n = kCausal ? max(causal_len(seq_lens, cu_seqlens_q, i), 0) : max(seq_lens[0], 0);
  const AttnArgs a{q, kv_cache, block_table, scale * *k_scale, *v_scale, num_heads, num_kv_heads,
                   head_dim, page_stride, static_cast<int64_t>(num_heads) * head_dim, 0};
  __shared__ MergeSmem smem;  // one instance, shared by every head_dim specialisation
  dispatch_head_dim(a, [&]<int kEpl, bool kContig>() {
    prefill_body<kEpl, kContig>(smem, a, h, i, n, out);
  });
}

}  // namespace kern_paged_attention

/// kern_paged_attention_partial_bf16(in bf16 q[T, H*D], in ptr kv_cache, in i32 block_table,
///     in i32 seq_lens[1], in i32 cu_seqlens_q[2], in f32 k_scale[1], in f32 v_scale[1],
///     out f32 partial_o[T, H*S*D], out f32 partial_ml[T, H*S*2], i32 num_tokens,
///     i32 num_heads, i32 num_kv_heads, i32 head_dim, i64 page_stride, f32 scale,
///     i32 num_splits)
/// Split s of query i covers [s L, min((s+1) L, n_i)), L = ceil(n_i / S).
/// Launch: grid [H, S, T], block [128, 1, 1] (Qwen3-4B decode: 512 blocks).
/// Bytes moved: 4 D (T H) per query row in L2 + 4 D n_i (k, v rows; each kv
/// head's rows are re-read by its H / KV query heads, from L2)
/// + 4 (D + 2) T H S (partials written).
extern "C" __global__ void __launch_bounds__(128) kern_paged_attention_partial_bf16(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ kv_cache,
    const int* __restrict__ block_table, const int* __restrict__ seq_lens,
    const int* __restrict__ cu_seqlens_q, const float* __restrict__ k_scale,
    const float* __restrict__ v_scale, float* __restrict__ partial_o, float* __restrict__ partial_ml,
    int num_tokens, int num_heads, int num_kv_heads, int head_dim, long long page_stride, float scale,
    int num_splits) {
  const int h = blockIdx.x, s = blockIdx.y, i = blockIdx.z;
  if (h >= num_heads || s >= num_splits || i >= num_tokens || num_kv_heads <= 0 ||
      num_heads < num_kv_heads || head_dim <= 0)
    return;
  const int n = max(causal_len(seq_lens, cu_seqlens_q, i), 0);
  const int len = (n + num_splits - 1) / num_splits;
  const int begin = min(s * len, n);
  const int end = min(begin + len, n);
  const int64_t part = (static_cast<int64_t>(i) * num_heads + h) * num_splits + s;
  const AttnArgs a{q, kv_cache, block_table, scale * *k_scale, *v_scale, num_heads, num_kv_heads,
                   head_dim, page_stride, static_cast<int64_t>(num_heads) * head_dim, 0};
  __shared__ MergeSmem smem;  // one instance, shared by every head_dim specialisation
  dispatch_head_dim(a, [&]<int kEpl, bool kContig>() {
    partial_body<kEpl, kContig>(smem, a, h, i, begin, end, partial_o + part * head_dim, partial_ml + part * 2);
  });
}

/// kern_paged_attention_reduce_bf16(in f32 partial_o, in f32 partial_ml, out bf16 out[T, H*D],
///     i32 num_tokens, i32 num_heads, i32 head_dim, i32 num_splits)
/// out = sum_s exp(m_s - M) o_s / sum_s exp(m_s - M) l_s (0 when every split is empty).
/// Launch: grid [H, T, 1], block [128, 1, 1].
/// Bytes moved: 4 T H S (D + 2) read + 2 T H D written.
extern "C" __global__ void __launch_bounds__(128) kern_paged_attention_reduce_bf16(
    const float* __restrict__ partial_o, const float* __restrict__ partial_ml,
    __nv_bfloat16* __restrict__ out, int num_tokens, int num_heads, int head_dim, int num_splits) {
  const int h = blockIdx.x, i = blockIdx.y;
  if (h >= num_heads || i >= num_tokens || head_dim <= 0) return;
  const int64_t first = (static_cast<int64_t>(i) * num_heads + h) * num_splits;
  const float* ml = partial_ml + first * 2;
  const float* po = partial_o + first * head_dim;
  float mm = -CUDART_INF_F;
  for (int s = 0; s < num_splits; ++s) mm = fmaxf(mm, ml[2 * s]);
  float ll = 0.0f;
  for (int s = 0; s < num_splits; ++s)
    if (ml[2 * s] != -CUDART_INF_F) ll += __expf(ml[2 * s] - mm) * ml[2 * s + 1];
  const float inv = ll > 0.0f ? 1.0f / ll : 0.0f;
  __nv_bfloat16* o = out + (static_cast<int64_t>(i) * num_heads + h) * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int s = 0; s < num_splits; ++s)
      if (ml[2 * s] != -CUDART_INF_F) acc += __expf(ml[2 * s] - mm) * po[static_cast<int64_t>(s) * head_dim + d];
    o[d] = f32_to_bf16(acc * inv);
  }
}

/// Defines entry point `name` with the attention interface params (q,
/// kv_cache, block_table, seq_lens, cu_seqlens_q, k_scale, v_scale, out,
/// num_tokens, num_heads, num_kv_heads, head_dim, page_stride, scale)
/// running kern_paged_attention::prefill_attention<kCausal>.
#define KERN_PREFILL_ENTRY(name, kCausal)                                                                     \
  extern "C" __global__ void __launch_bounds__(128) name(                                                     \
      const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ kv_cache,                       \
      const int* __restrict__ block_table, const int* __restrict__ seq_lens,                                 \
      const int* __restrict__ cu_seqlens_q, const float* __restrict__ k_scale,                               \
      const float* __restrict__ v_scale, __nv_bfloat16* __restrict__ out, int num_tokens, int num_heads,     \
      int num_kv_heads, int head_dim, long long page_stride, float scale) {                                  \
    kern_paged_attention::prefill_attention<kCausal>(q, kv_cache, block_table, seq_lens, cu_seqlens_q, k_scale, \
                                                     v_scale, out, num_tokens, num_heads, num_kv_heads, head_dim,  \
                                                     page_stride, scale);                                         \
  }

/// kern_paged_attention_prefill_bf16(the attention interface params, docs/kernels.md §8)
/// Launch: grid [H, T, 1], block [128, 1, 1]; block (h, i) attends over all
/// n_i positions of query i. K/V rows are re-read per query and per query
/// head of a group: from L2 after the first (4 D n_i bytes per block).
KERN_PREFILL_ENTRY(kern_paged_attention_prefill_bf16, true)

/// kern_paged_attention_noncausal_bf16(the attention interface params, docs/kernels.md §8)
/// The DFlash draft's attention (docs/speculative.md): the prefill kernel
/// with every query attending to all seq_lens[0] cache positions (the
/// context and the whole block), not causally.
/// Launch: grid [H, T, 1], block [128, 1, 1]; bytes moved as the prefill
/// kernel with n_i = seq_lens[0] for every query.
KERN_PREFILL_ENTRY(kern_paged_attention_noncausal_bf16, false)

#include "attention_decode.cuh"
