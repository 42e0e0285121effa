// Batched decode attention over per-sequence block tables (docs/kernels.md
// §15, docs/batching.md): one query row per sequence, row r attends to its
// own sequence's cache positions [0, seq_lens[r]) through row r of the
// block tables [B, pages_per_seq]. The batched `decode_batch` program's
// attention: kern_attention_decode_batch_qkv_bf16 (the default, §15a) folds in
// q/k norm + RoPE + the KV write from the raw qkv rows; the plain
// kern_attention_decode_batch_bf16 serves --kernels fused-qk-separate. The
// single-sequence kern_attention_decode_bf16 / _qkv_bf16 serve `decode` and
// speculative verify.
//
// Same arithmetic as the one-launch decode: split-KV with S splits of
// L = ceil(n_r / S) positions, each block (kv head, split, row) reads each
// k / v row once for the G = H / KV query heads of its kv head (one online
// softmax per head, f32), its 4 warps merged through shared memory into the
// split's partials; the last block of (row, kv head) (an integer arrival
// counter, reset to 0 after) merges the splits in order 0, 1, ... and writes
// bf16. A row's result depends only on its own sequence and S, never on B or
// the other rows (batch invariance).
//
// Registers: at most 8 query heads per kv head and 8 dims per lane (head_dim
// 64/128/256 contiguous, any other head_dim <= 256 strided), so every
// instantiation stays spill-free at 128 threads (nvcc -Xptxas -v, sm_90).
#include <math_constants.h>

#include "kern_cuda_common.cuh"
#include "qk_norm_rope.cuh"

using namespace kern_cuda;

namespace {

constexpr int kWarps = 4;            // block [128, 1, 1]
constexpr int kMaxHeadDim = 256;     // 8 dims per lane
constexpr int kMaxGroup = 8;         // query heads per kv head held in registers
constexpr int kMaxSplitPages = 256;  // block-table entries of a split hoisted into shared memory
constexpr int kMaxRows = 8;          // sequences of one launch: the scratch and counters have 8 rows

/// Loads this lane's dims of a head row: contiguous [lane*kEpl, +kEpl) when
/// kContig (D == 32 kEpl, row 4 kEpl-byte aligned), else strided lane + 32 j
/// (zero past D).
template <int kEpl, bool kContig>
__device__ __forceinline__ void load_lane(const __nv_bfloat16* row, int lane, int head_dim, float out[kEpl]) {
  if constexpr (kContig && kEpl == 2) {
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(row + lane * 2));
    out[0] = f.x;
    out[1] = f.y;
  } else if constexpr (kContig && kEpl == 4) {
    load4(row + lane * 4, out);
  } else if constexpr (kContig && kEpl == 8) {
    load8(row + lane * 8, out);
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

/// Shared state of one block: each warp's partial softmax of one head.
struct MergeSmem {
  float m[kWarps];
  float l[kWarps];
  float o[kWarps][kMaxHeadDim];
};

/// What every block of a launch reads.
struct BatchArgs {
  const __nv_bfloat16* q;
  const __nv_bfloat16* kv;
  float score_scale;
  float v_scale;
  int num_heads;
  int num_kv_heads;
  int head_dim;
  int64_t page_stride;
  // Row r's head h is at q + r * q_row_stride + (h - q_head0) * head_dim (q in global
  // memory: H * D and 0; the qkv prologue's heads in shared memory: 0 and the group's first).
  int64_t q_row_stride;
  int q_head0;
};

}  // namespace

// A named namespace, not the anonymous one: a function declaring __shared__
// variables in an anonymous namespace gets a path-dependent _INTERNAL_ name
// in the PTX (see gemv.cu).
namespace kern_attention_decode_batch {

/// Split s of (kv head kvh, row r) over positions [begin, end): the
/// unnormalised o and (m, l) of each of the group's heads into the partials
/// ([row][head][split] cells). `pages` holds the split's block-table entries
/// from page `page0` (the first kMaxSplitPages of them); `table` is row r's.
template <int kEpl, bool kContig>
__device__ void split_body(MergeSmem& smem, const int* pages, int page0, const int* table, const BatchArgs& a,
                           int kvh, int r, int s, int num_splits, int begin, int end, float* partial_o,
                           float* partial_ml) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int group = a.num_heads / a.num_kv_heads;
  const int h0 = kvh * group;
  float qf[kMaxGroup][kEpl], o[kMaxGroup][kEpl], m[kMaxGroup], l[kMaxGroup];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    m[g] = -CUDART_INF_F;
    l[g] = 0.0f;
#pragma unroll
    for (int j = 0; j < kEpl; ++j) {
      o[g][j] = 0.0f;
      qf[g][j] = 0.0f;
    }
    if (g < group)
      load_lane<kEpl, kContig>(a.q + r * a.q_row_stride + static_cast<int64_t>(h0 + g - a.q_head0) * a.head_dim,
                               lane, a.head_dim, qf[g]);
  }
  const int64_t head_off = static_cast<int64_t>(kvh) * 2 * a.head_dim;
  const int64_t slot_elems = static_cast<int64_t>(a.num_kv_heads) * 2 * a.head_dim;
  for (int p = begin + warp; p < end; p += kWarps) {
    const int pi = (p >> 4) - page0;
    const int64_t page = pi < kMaxSplitPages ? pages[pi] : table[p >> 4];
    if (page < 0) continue;  // a padded entry inside the length: bad input, read nothing (the cpu twin reports it)
    const __nv_bfloat16* krow = a.kv + page * a.page_stride + (p & 15) * slot_elems + head_off;
    float kf[kEpl], vf[kEpl];
    load_lane<kEpl, kContig>(krow, lane, a.head_dim, kf);
    load_lane<kEpl, kContig>(krow + a.head_dim, lane, a.head_dim, vf);
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      if (g >= group) break;
      float dot = 0.0f;
#pragma unroll
      for (int j = 0; j < kEpl; ++j) dot += qf[g][j] * kf[j];
      const float sc = warp_sum(dot) * a.score_scale;
      const float m_new = fmaxf(m[g], sc);
      const float alpha = __expf(m[g] - m_new);  // m = -inf on the first position: 0
      const float w = __expf(sc - m_new);
      l[g] = l[g] * alpha + w;
#pragma unroll
      for (int j = 0; j < kEpl; ++j) o[g][j] = o[g][j] * alpha + w * (vf[j] * a.v_scale);
      m[g] = m_new;
    }
  }
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    if (g >= group) break;
    __syncthreads();  // the previous head's merge has read smem
    if (lane == 0) {
      smem.m[warp] = m[g];
      smem.l[warp] = l[g];
    }
#pragma unroll
    for (int j = 0; j < kEpl; ++j) {
      const int d = lane_dim<kEpl, kContig>(lane, j);
      if (d < a.head_dim) smem.o[warp][d] = o[g][j];
    }
    __syncthreads();
    float mm = -CUDART_INF_F;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mm = fmaxf(mm, smem.m[w]);
    float wt[kWarps];
    float ll = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      wt[w] = mm == -CUDART_INF_F ? 0.0f : __expf(smem.m[w] - mm);
      ll += wt[w] * smem.l[w];
    }
    const int64_t part = (static_cast<int64_t>(r) * a.num_heads + h0 + g) * num_splits + s;
    for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
      float acc = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) acc += wt[w] * smem.o[w][d];
      partial_o[part * a.head_dim + d] = acc;
    }
    if (threadIdx.x == 0) {
      partial_ml[part * 2] = mm;
      partial_ml[part * 2 + 1] = ll;
    }
  }
}

/// Block (kvh, s, r) over row r's n positions (table: row r's block-table
/// row): the split's partials, then, in the last of the S blocks of (r, kvh)
/// (integer arrival counter, reset to 0 after), the in-order merge of the
/// splits into bf16 out for the group's heads.
__device__ __forceinline__ void decode_row(MergeSmem& smem, int* pages, int& last_block, const BatchArgs& a,
                                           const int* table, int kvh, int r, int s, int num_splits, int n,
                                           float* partial_o, float* partial_ml, int* counters,
                                           __nv_bfloat16* __restrict__ out) {
  const int num_heads = a.num_heads, num_kv_heads = a.num_kv_heads, head_dim = a.head_dim;
  const int len = (n + num_splits - 1) / num_splits;
  const int begin = min(s * len, n);
  const int end = min(begin + len, n);
  const int page0 = begin >> 4;
  const int npages = end > begin ? ((end - 1) >> 4) - page0 + 1 : 0;
  for (int p = threadIdx.x; p < min(npages, kMaxSplitPages); p += blockDim.x) pages[p] = table[page0 + p];
  __syncthreads();
  const bool rows_aligned = aligned_to(a.q, 16) && aligned_to(a.kv, 16) && (a.page_stride & 7) == 0;
  if (rows_aligned && head_dim == 128)
    split_body<4, true>(smem, pages, page0, table, a, kvh, r, s, num_splits, begin, end, partial_o, partial_ml);
  else if (rows_aligned && head_dim == 64)
    split_body<2, true>(smem, pages, page0, table, a, kvh, r, s, num_splits, begin, end, partial_o, partial_ml);
  else if (rows_aligned && head_dim == 256)
    split_body<8, true>(smem, pages, page0, table, a, kvh, r, s, num_splits, begin, end, partial_o, partial_ml);
  else
    split_body<8, false>(smem, pages, page0, table, a, kvh, r, s, num_splits, begin, end, partial_o, partial_ml);

  // Last block of (r, kvh): merge the splits in order for the group's heads.
  __threadfence();
  __syncthreads();
  int* counter = counters + static_cast<int64_t>(r) * num_kv_heads + kvh;
  if (threadIdx.x == 0) last_block = atomicAdd(counter, 1) == num_splits - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  const int group = num_heads / num_kv_heads;
  for (int g = 0; g < group; ++g) {
    const int h = kvh * group + g;
    const int64_t first = (static_cast<int64_t>(r) * num_heads + h) * num_splits;
    const float* ml = partial_ml + first * 2;
    const float* po = partial_o + first * head_dim;
    float mm = -CUDART_INF_F;
    for (int sp = 0; sp < num_splits; ++sp) mm = fmaxf(mm, __ldcg(ml + 2 * sp));
    float ll = 0.0f;
    for (int sp = 0; sp < num_splits; ++sp) {
      const float m_s = __ldcg(ml + 2 * sp);
      if (m_s != -CUDART_INF_F) ll += __expf(m_s - mm) * __ldcg(ml + 2 * sp + 1);
    }
    const float inv = ll > 0.0f ? 1.0f / ll : 0.0f;
    __nv_bfloat16* o = out + (static_cast<int64_t>(r) * num_heads + h) * head_dim;
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
      float acc = 0.0f;
      for (int sp = 0; sp < num_splits; ++sp) {
        const float m_s = __ldcg(ml + 2 * sp);
        if (m_s != -CUDART_INF_F) acc += __expf(m_s - mm) * __ldcg(po + static_cast<int64_t>(sp) * head_dim + d);
      }
      o[d] = f32_to_bf16(acc * inv);
    }
  }
  if (threadIdx.x == 0) *counter = 0;  // ready for the next launch / graph replay
}

}  // namespace kern_attention_decode_batch

/// kern_attention_decode_batch_bf16(in bf16 q[B, H*D], in ptr kv_cache (layer base),
///     in i32 block_tables[B, pages_per_seq], in i32 seq_lens[B], in f32 k_scale[1],
///     in f32 v_scale[1], out f32 partial_o[B, H*S*D], out f32 partial_ml[B, H*S*2],
///     inout i32 counters[B * KV], out bf16 out[B, H*D], i32 num_seqs, i32 num_heads,
///     i32 num_kv_heads, i32 head_dim, i64 page_stride, f32 scale, i32 pages_per_seq,
///     i32 num_splits)
/// Row r (one decode query per sequence, at position seq_lens[r] - 1)
/// attends to positions [0, n_r), n_r = min(seq_lens[r], 16 pages_per_seq);
/// position p lives in page block_tables[r, p / 16], slot p % 16. n_r <= 0
/// (a free batch slot) writes zeros. Counters start at 0 and are left at 0.
/// Does nothing for B > 8, H / KV > 8 or head_dim > 256 (the cpu twin
/// reports those as launch errors).
/// Launch: grid [KV, S, B], block [128, 1, 1].
/// Bytes moved: 4 D n_r per (row, kv head) (k, v once) + 2 D B H (q)
/// + 8 (D + 2) B H S (partials written and read back) + 2 D B H (out).
extern "C" __global__ void __launch_bounds__(128) kern_attention_decode_batch_bf16(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ kv_cache,
    const int* __restrict__ block_tables, const int* __restrict__ seq_lens, const float* __restrict__ k_scale,
    const float* __restrict__ v_scale, float* partial_o, float* partial_ml, int* counters,
    __nv_bfloat16* __restrict__ out, int num_seqs, int num_heads, int num_kv_heads, int head_dim,
    long long page_stride, float scale, int pages_per_seq, int num_splits) {
  using namespace kern_attention_decode_batch;
  __shared__ MergeSmem smem;
  __shared__ int pages[kMaxSplitPages];
  __shared__ int last_block;
  const int kvh = blockIdx.x, s = blockIdx.y, r = blockIdx.z;
  pdl_launch_dependents();
  if (kvh >= num_kv_heads || s >= num_splits || r >= num_seqs || num_seqs > kMaxRows || num_kv_heads <= 0 ||
      num_heads < num_kv_heads || num_heads % num_kv_heads != 0 || num_heads / num_kv_heads > kMaxGroup ||
      head_dim <= 0 || head_dim > kMaxHeadDim || pages_per_seq < 0 || num_splits <= 0)
    return;
  pdl_wait();  // q, the cache and the lengths come from earlier launches
  const int* table = block_tables + static_cast<int64_t>(r) * pages_per_seq;
  const int n = max(min(seq_lens[r], pages_per_seq * 16), 0);
  const BatchArgs a{q, kv_cache, scale * *k_scale, *v_scale, num_heads, num_kv_heads, head_dim, page_stride,
                    static_cast<int64_t>(num_heads) * head_dim, 0};
  decode_row(smem, pages, last_block, a, table, kvh, r, s, num_splits, n, partial_o, partial_ml, counters, out);
}

/// kern_attention_decode_batch_qkv_bf16(in bf16 qkv[B, qkv_stride], in bf16 q_norm_weight[D],
///     in bf16 k_norm_weight[D], in f32 cos_sin_cache[max_pos, D], inout ptr kv_cache (layer base),
///     in i32 block_tables[B, pages_per_seq], in i32 seq_lens[B], in f32 k_scale[1], in f32 v_scale[1],
///     out f32 partial_o[B, H*S*D], out f32 partial_ml[B, H*S*2], inout i32 counters[B * KV],
///     out bf16 out[B, H*D], i32 num_seqs, i32 num_heads, i32 num_kv_heads, i32 head_dim,
///     i64 page_stride, f32 scale, i32 pages_per_seq, i32 num_splits, i32 qkv_stride, f32 eps,
///     u8 rope_flags)
/// decode_batch's q/k norm + RoPE + KV write + attention in one launch
/// (docs/kernels.md §15a): kern_qk_norm_rope_cache_bf16 (row r at position
/// n_r - 1, its slot from row r's block table) followed by
/// kern_attention_decode_batch_bf16, in their operation order; the ABI and the prologue
/// protocol of kern_attention_decode_qkv_bf16 (attention_decode.cuh): block
/// (kvh, s, r) normalises and rotates its group's q heads into shared memory,
/// the block whose split holds position n_r - 1 writes the kv head's new k
/// and v there and reads them back itself; no other block reads them. A free
/// row (seq_lens[r] <= 0) writes no cache slot and zeros to out. Does nothing
/// for B > 8, H / KV > 8, head_dim > 256 or odd (the cpu twin reports them).
/// Launch: grid [KV, S, B], block [128, 1, 1].
/// Bytes moved per row: kern_attention_decode_batch_bf16's with q read from
/// the qkv row (2 (H + 2 KV) D) + 4 KV D (new k, v) + 8 D (cos/sin, norm weights).
extern "C" __global__ void __launch_bounds__(128) kern_attention_decode_batch_qkv_bf16(
    const __nv_bfloat16* __restrict__ qkv, const __nv_bfloat16* __restrict__ q_norm_weight,
    const __nv_bfloat16* __restrict__ k_norm_weight, const float* __restrict__ cos_sin_cache,
    __nv_bfloat16* kv_cache, const int* __restrict__ block_tables, const int* __restrict__ seq_lens,
    const float* __restrict__ k_scale, const float* __restrict__ v_scale, float* partial_o, float* partial_ml,
    int* counters, __nv_bfloat16* __restrict__ out, int num_seqs, int num_heads, int num_kv_heads, int head_dim,
    long long page_stride, float scale, int pages_per_seq, int num_splits, int qkv_stride, float eps,
    unsigned char rope_flags) {
  using namespace kern_attention_decode_batch;
  __shared__ MergeSmem smem;
  __shared__ int pages[kMaxSplitPages];
  __shared__ int last_block;
  __shared__ __align__(16) __nv_bfloat16 q_smem[kMaxGroup * kMaxHeadDim];  // the group's normalised q heads
  const int kvh = blockIdx.x, s = blockIdx.y, r = blockIdx.z;
  pdl_launch_dependents();
  if (kvh >= num_kv_heads || s >= num_splits || r >= num_seqs || num_seqs > kMaxRows || num_kv_heads <= 0 ||
      num_heads < num_kv_heads || num_heads % num_kv_heads != 0 || num_heads / num_kv_heads > kMaxGroup ||
      head_dim <= 0 || head_dim > kMaxHeadDim || (head_dim & 1) != 0 || pages_per_seq < 0 || num_splits <= 0)
    return;
  pdl_wait();  // qkv, the cache and the lengths come from earlier launches
  const int* table = block_tables + static_cast<int64_t>(r) * pages_per_seq;
  const int n = max(min(seq_lens[r], pages_per_seq * 16), 0);
  const int len = (n + num_splits - 1) / num_splits;
  const int begin = min(s * len, n);
  const int group = num_heads / num_kv_heads;
  const int pos = n == seq_lens[r] ? n - 1 : -1;  // the new token's position (-1: a free row, or past the table)
  __nv_bfloat16* slot = nullptr;
  if (pos >= begin && pos < min(begin + len, n)) {
    const int64_t page = table[pos >> 4];
    if (page >= 0)
      slot = kv_cache + page * page_stride + ((pos & 15) * static_cast<int64_t>(num_kv_heads) + kvh) * 2 * head_dim;
  }
  kern_qk_norm_rope::qkv_prologue<kWarps>(qkv + static_cast<int64_t>(r) * qkv_stride,
                                          kern_qk_norm_rope::norm_weight(q_norm_weight, rope_flags),
                                          kern_qk_norm_rope::norm_weight(k_norm_weight, rope_flags),
                                          cos_sin_cache + static_cast<int64_t>(max(pos, 0)) * head_dim, num_heads,
                                          num_kv_heads, kvh, group, head_dim, eps,
                                          (rope_flags & kern_qk_norm_rope::kRopeNeox) != 0, *k_scale, *v_scale,
                                          slot, q_smem, &smem.o[0][0]);
  const BatchArgs a{q_smem, kv_cache, scale * *k_scale, *v_scale, num_heads, num_kv_heads, head_dim, page_stride,
                    0, kvh * group};
  decode_row(smem, pages, last_block, a, table, kvh, r, s, num_splits, n, partial_o, partial_ml, counters, out);
}
