// kern_attention_decode_bf16 (docs/kernels.md §13): decode attention in one
// launch, split-KV with the splits merged by the last block of each
// (query row, kv head). Included by paged_attention.cu (its helpers:
// AttnArgs, causal_len, kMaxHeadDim), so the symbol stays in
// paged_attention.fatbin.
//
// Block (kvh, s, i) computes split s of query row i for the G = H / KV query
// heads of kv head kvh, reading each k / v row of the split once:
//   * a "slot" of kLanes lanes owns one cache position at a time; a lane
//     holds kEpl dims (contiguous: one 16/8/4-byte load of k and of v), so a
//     warp has 32 / kLanes positions in flight per unrolled step and kU steps
//     are loaded before any is used (32 / kLanes * kU rows per warp);
//   * the G heads' dot products are reduced together (G * kU independent
//     xor-shuffle chains over the slot's lanes), and each head's online
//     softmax takes the kU positions at once (one rescale per kU positions);
//   * the block's slots are merged per (head, dim) in parallel through
//     shared memory into the split's partials (the §8 layout);
//   * the last block of (i, kvh) (counter protocol in docs/kernels.md,
//     "Cooperating blocks") loads every split's (m, l) in parallel (a warp
//     per head, a lane per split), puts the split weights in shared memory,
//     and then each thread merges (head, dim) items over the splits in order
//     0, 1, ..., S-1 with all S loads independent.
// Every shape is specialised at compile time (G, kEpl, kLanes) so the
// registers hold exactly G heads; shapes outside the table run the strided
// one-head-at-a-time fallback (k / v re-read per head from L2).
#pragma once

namespace kern_attention_decode {

constexpr int kMaxGroup = 8;         // query heads per kv head
constexpr int kMaxSplitPages = 256;  // block-table entries of a split hoisted into shared memory
constexpr int kMaxDecodeRows = 8;    // query rows of one launch (decode 1, speculative verify the block);
                                     // the manifest sizes the split scratch and counters for these
constexpr int kMaxSplits = 64;       // num_splits: the split weights of the merge live in shared memory
constexpr int kMaxSlots = 16;        // kWarps * 32 / kLanes, kLanes >= 8
constexpr int kMergeFloats = 4096;   // slots * G * D floats of the block merge (16 KB)

/// Shared memory of one block (static: 20.7 KB).
struct DecodeSmem {
  float o[kMergeFloats];            ///< [slot][g * D + d]: each slot's unnormalised output
  float m[kMaxSlots][kMaxGroup];    ///< each slot's running max per head
  float l[kMaxSlots][kMaxGroup];    ///< each slot's sum of exp per head
  float wt[kMaxGroup][kMaxSplits];  ///< last block: split weights exp(m_s - M) per head
  float inv_l[kMaxGroup];           ///< last block: 1 / sum_s wt l_s per head (0 when empty)
  int pages[kMaxSplitPages];        ///< the split's block-table entries
  int last_block;
};

/// One lane's kEpl dims of a k or v row: contiguous bf16 pairs (kContig,
/// one vector load) or kEpl strided dims sub + kLanes j (zero past D).
template <int kEpl, int kLanes, bool kContig>
struct LaneRow {
  static constexpr int kWords = kContig ? (kEpl + 1) / 2 : kEpl;
  uint32_t w[kWords];  ///< kContig: bf16 pairs; else f32 bits of each dim

  __device__ __forceinline__ void load(const __nv_bfloat16* row, int sub, int head_dim) {
    if constexpr (kContig) {
      const __nv_bfloat16* p = row + sub * kEpl;
      if constexpr (kEpl == 8) {
        expect_aligned(p, 16);
        const uint4 v = *reinterpret_cast<const uint4*>(p);
        w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
      } else if constexpr (kEpl == 4) {
        expect_aligned(p, 8);
        const uint2 v = *reinterpret_cast<const uint2*>(p);
        w[0] = v.x, w[1] = v.y;
      } else {
        static_assert(kEpl == 2);
        expect_aligned(p, 4);
        w[0] = *reinterpret_cast<const uint32_t*>(p);
      }
    } else {
#pragma unroll
      for (int j = 0; j < kEpl; ++j) {
        const int d = sub + kLanes * j;
        w[j] = __float_as_uint(d < head_dim ? bf16_to_f32(row[d]) : 0.0f);
      }
    }
  }
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int j = 0; j < kWords; ++j) w[j] = 0;
  }
  __device__ __forceinline__ float at(int j) const {
    if constexpr (kContig) {
      const float2 f = word_to_f32x2(w[j >> 1]);
      return (j & 1) ? f.y : f.x;
    } else {
      return __uint_as_float(w[j]);
    }
  }
  /// The head dim of this lane's element j.
  static __device__ __forceinline__ int dim(int sub, int j) { return kContig ? sub * kEpl + j : sub + kLanes * j; }
};

/// Sum over the kLanes lanes of a slot (lanes [r kLanes, (r + 1) kLanes)); every lane of the slot gets it.
template <int kLanes>
__device__ __forceinline__ float slot_sum(float v) {
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Split [begin, end) of query row i for the kG heads [hb, hb + kG) of kv
/// head kvh: the slots' online softmax, then the block merge into
/// partial_o / partial_ml (unnormalised o times v_scale, and (m, l)).
/// Ends with a __syncthreads (the smem may be reused right after).
template <int kG, int kEpl, int kLanes, bool kContig, int kU>
__device__ void split_heads(DecodeSmem& sm, const AttnArgs& a, int kvh, int hb, int i, int s, int num_splits,
                            int begin, int end, int page0, float* partial_o, float* partial_ml) {
  constexpr int kSlotsPerWarp = 32 / kLanes;
  constexpr int kSlots = kWarps * kSlotsPerWarp;
  static_assert(kSlots <= kMaxSlots && kG <= kMaxGroup);
  static_assert(kSlots * kG * (kContig ? kEpl * kLanes : kMaxHeadDim) <= kMergeFloats, "the slots' outputs fit sm.o");
  using Row = LaneRow<kEpl, kLanes, kContig>;
  const int lane = threadIdx.x & 31;
  const int sub = lane % kLanes;
  const int warp_slot0 = (threadIdx.x >> 5) * kSlotsPerWarp;  // the warp's first slot
  const int slot = warp_slot0 + lane / kLanes;
  const int D = a.head_dim;

  float qf[kG][kEpl], o[kG][kEpl], m[kG], l[kG];
#pragma unroll
  for (int g = 0; g < kG; ++g) {
    Row qr;
    qr.load(a.q + i * a.q_row_stride + static_cast<int64_t>(hb + g - a.q_head0) * D, sub, D);
    m[g] = -CUDART_INF_F;
    l[g] = 0.0f;
#pragma unroll
    for (int j = 0; j < kEpl; ++j) {
      qf[g][j] = qr.at(j) * a.score_scale;  // the scale folded into q once
      o[g][j] = 0.0f;
    }
  }
  const int64_t head_off = static_cast<int64_t>(kvh) * 2 * D;
  const int64_t slot_elems = static_cast<int64_t>(a.num_kv_heads) * 2 * D;
  // The loop and the shuffles are warp-uniform: the warp runs while its
  // first slot has a position; a slot past `end` takes masked steps.
  for (int pw = begin + warp_slot0; pw < end; pw += kSlots * kU) {
    const int p0 = pw + (slot - warp_slot0);
    Row kr[kU], vr[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {  // every load of the step issued before any is used
      const int p = p0 + kSlots * u;
      if (p < end) {
        const int pi = (p >> 4) - page0;
        const int64_t page = pi < kMaxSplitPages ? sm.pages[pi] : a.block_table[p >> 4];
        const __nv_bfloat16* krow = a.kv + page * a.page_stride + (p & 15) * slot_elems + head_off;
        kr[u].load(krow, sub, D);
        vr[u].load(krow + D, sub, D);
      } else {
        kr[u].zero();
        vr[u].zero();
      }
    }
    float sc[kU][kG];
#pragma unroll
    for (int u = 0; u < kU; ++u)
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        float dot = 0.0f;
#pragma unroll
        for (int j = 0; j < kEpl; ++j) dot += qf[g][j] * kr[u].at(j);
        sc[u][g] = dot;
      }
#pragma unroll
    for (int u = 0; u < kU; ++u)  // kU * kG independent shuffle chains
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        const float dot = slot_sum<kLanes>(sc[u][g]);  // every lane of the warp shuffles
        sc[u][g] = p0 + kSlots * u < end ? dot : -CUDART_INF_F;
      }
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      float mx = m[g];
#pragma unroll
      for (int u = 0; u < kU; ++u) mx = fmaxf(mx, sc[u][g]);
      const float alpha = m[g] == mx ? 1.0f : __expf(m[g] - mx);  // both -inf: nothing seen yet
      float wu[kU];
      float wsum = 0.0f;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        wu[u] = sc[u][g] == -CUDART_INF_F ? 0.0f : __expf(sc[u][g] - mx);
        wsum += wu[u];
      }
      l[g] = l[g] * alpha + wsum;
#pragma unroll
      for (int j = 0; j < kEpl; ++j) {
        float acc = o[g][j] * alpha;
#pragma unroll
        for (int u = 0; u < kU; ++u) acc += wu[u] * vr[u].at(j);
        o[g][j] = acc;
      }
      m[g] = mx;
    }
  }

  // Publish the slots' states, then merge the slots per (head, dim) in parallel.
  const int hd = kG * D;  // floats per slot in sm.o
  if (sub == 0) {
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      sm.m[slot][g] = m[g];
      sm.l[slot][g] = l[g];
    }
  }
#pragma unroll
  for (int g = 0; g < kG; ++g)
#pragma unroll
    for (int j = 0; j < kEpl; ++j) {
      const int d = Row::dim(sub, j);
      if (d < D) sm.o[slot * hd + g * D + d] = o[g][j];
    }
  __syncthreads();
  for (int idx = threadIdx.x; idx < hd; idx += blockDim.x) {
    const int g = idx / D, d = idx - g * D;
    float mm = -CUDART_INF_F;
#pragma unroll
    for (int t = 0; t < kSlots; ++t) mm = fmaxf(mm, sm.m[t][g]);
    float acc = 0.0f, ll = 0.0f;
#pragma unroll
    for (int t = 0; t < kSlots; ++t) {
      const float wt = sm.m[t][g] == -CUDART_INF_F ? 0.0f : __expf(sm.m[t][g] - mm);
      acc += wt * sm.o[t * hd + idx];
      ll += wt * sm.l[t][g];
    }
    const int64_t part = (static_cast<int64_t>(i) * a.num_heads + hb + g) * num_splits + s;
    partial_o[part * D + d] = acc * a.v_scale;
    if (d == 0) {
      partial_ml[part * 2] = mm;
      partial_ml[part * 2 + 1] = ll;
    }
  }
  __syncthreads();
}

/// The whole split for the group's heads [h0, h0 + group): a compile-time
/// shape when the table below has one, else kern's strided fallback (one
/// head at a time, D <= 512).
__device__ __forceinline__ void split_body(DecodeSmem& sm, const AttnArgs& a, int kvh, int i, int s, int num_splits,
                                           int begin, int end, int page0, float* po, float* pml) {
  const int group = a.num_heads / a.num_kv_heads;
  const int h0 = kvh * group;
  const int D = a.head_dim;
  const bool al16 = aligned_to(a.q, 16) && aligned_to(a.kv, 16) && (a.page_stride & 7) == 0;
  const bool al4 = aligned_to(a.q, 4) && aligned_to(a.kv, 4) && (a.page_stride & 1) == 0;
#define KERN_DECODE_SHAPE(G, EPL, LANES) \
  return split_heads<G, EPL, LANES, true, 4>(sm, a, kvh, h0, i, s, num_splits, begin, end, page0, po, pml)
  if (al16 && D == 128) {  // Qwen3 0.6B .. 32B
    if (group == 4) KERN_DECODE_SHAPE(4, 8, 16);
    if (group == 2) KERN_DECODE_SHAPE(2, 8, 16);
    if (group == 1) KERN_DECODE_SHAPE(1, 8, 16);
    if (group == 8) KERN_DECODE_SHAPE(8, 4, 32);
  } else if (al16 && D == 64) {
    if (group == 4) KERN_DECODE_SHAPE(4, 4, 16);
    if (group == 2) KERN_DECODE_SHAPE(2, 4, 16);
    if (group == 8) KERN_DECODE_SHAPE(8, 4, 16);
  } else if (al16 && D == 256) {
    if (group == 2) KERN_DECODE_SHAPE(2, 8, 32);
    if (group == 4) KERN_DECODE_SHAPE(4, 8, 32);
  } else if (al4 && D == 16) {  // the tiny test models
    if (group == 2) KERN_DECODE_SHAPE(2, 2, 8);
    if (group == 4) KERN_DECODE_SHAPE(4, 2, 8);
  }
#undef KERN_DECODE_SHAPE
  for (int g = 0; g < group; ++g)
    split_heads<1, kMaxHeadDim / 32, 32, false, 2>(sm, a, kvh, h0 + g, i, s, num_splits, begin, end, page0, po, pml);
}

/// Last block of (i, kvh): out[i, h] = bf16(sum_s wt_s o_s / sum_s wt_s l_s)
/// for the group's heads, wt_s = exp(m_s - max_s m_s) (0 for an empty split),
/// splits summed in order 0 .. S-1.
__device__ __forceinline__ void merge_splits(DecodeSmem& sm, const AttnArgs& a, int kvh, int i, int num_splits,
                                             const float* partial_o, const float* partial_ml,
                                             __nv_bfloat16* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int group = a.num_heads / a.num_kv_heads;
  const int h0 = kvh * group;
  const int D = a.head_dim;
  for (int g = warp; g < group; g += kWarps) {  // a warp per head, a lane per split
    const float* ml = partial_ml + ((static_cast<int64_t>(i) * a.num_heads + h0 + g) * num_splits) * 2;
    float mm = -CUDART_INF_F;
    for (int sp = lane; sp < num_splits; sp += 32) mm = fmaxf(mm, __ldcg(ml + 2 * sp));
    mm = warp_max(mm);
    float ll = 0.0f;
    for (int sp = lane; sp < num_splits; sp += 32) {
      const float m_s = __ldcg(ml + 2 * sp);
      const float wt = m_s == -CUDART_INF_F ? 0.0f : __expf(m_s - mm);
      sm.wt[g][sp] = wt;
      ll += wt * __ldcg(ml + 2 * sp + 1);
    }
    ll = warp_sum(ll);
    if (lane == 0) sm.inv_l[g] = ll > 0.0f ? 1.0f / ll : 0.0f;
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < group * D; idx += blockDim.x) {
    const int g = idx / D, d = idx - g * D;
    const int64_t row = static_cast<int64_t>(i) * a.num_heads + h0 + g;
    const float* po = partial_o + row * num_splits * D + d;
    float acc = 0.0f;
#pragma unroll 16
    for (int sp = 0; sp < num_splits; ++sp) acc += sm.wt[g][sp] * __ldcg(po + static_cast<int64_t>(sp) * D);
    out[row * D + d] = f32_to_bf16(acc * sm.inv_l[g]);
  }
}

/// Cooperating blocks (docs/kernels.md): the block's partials are published
/// before its count, and the last of the S blocks of (i, kvh) merges the
/// splits into out and resets the counter.
__device__ __forceinline__ void finish_split(DecodeSmem& sm, const AttnArgs& a, int kvh, int i, int num_splits,
                                             const float* partial_o, const float* partial_ml, int* counters,
                                             __nv_bfloat16* __restrict__ out) {
  __threadfence();
  __syncthreads();
  int* counter = counters + static_cast<int64_t>(i) * a.num_kv_heads + kvh;
  if (threadIdx.x == 0) sm.last_block = atomicAdd(counter, 1) == num_splits - 1;
  __syncthreads();
  if (!sm.last_block) return;
  __threadfence();  // the other blocks' partials are read after their counts were seen
  merge_splits(sm, a, kvh, i, num_splits, partial_o, partial_ml, out);
  if (threadIdx.x == 0) *counter = 0;  // ready for the next launch / graph replay
}

}  // namespace kern_attention_decode

/// kern_attention_decode_bf16(interface params 0..6, out f32 partial_o[T, H*S*D],
///     out f32 partial_ml[T, H*S*2], inout i32 counters[T * KV], out bf16 out[T, H*D],
///     i32 num_tokens, i32 num_heads, i32 num_kv_heads, i32 head_dim, i64 page_stride,
///     f32 scale, i32 num_splits)
/// Decode attention in one launch: block (kvh, s, i) computes split s (the
/// same splits as kern_paged_attention_partial_bf16) of query row i for the
/// H / KV query heads sharing kv head kvh, reading each k / v row once; the
/// split's block-table entries are loaded into shared memory first. The last
/// block of (i, kvh) to finish (integer counter, reset to 0 after;
/// docs/kernels.md "Cooperating blocks") merges the splits in order 0, 1, ...
/// for its heads and writes bf16 out. A row's result depends only on its
/// causal length and S, never on T. Does nothing for T > 8 (kMaxDecodeRows:
/// the scratch is sized for 8 rows), H / KV > 8, D > 512 or S > 64 (the cpu
/// twin reports them).
/// Launch: grid [KV, S, T], block [128, 1, 1].
/// Bytes moved: 4 D n_i per (query row, kv head) (k, v once) + 2 D T H (q)
/// + 8 (D + 2) T H S (partials written and read back) + 2 D T H (out).
extern "C" __global__ void __launch_bounds__(128) kern_attention_decode_bf16(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ kv_cache,
    const int* __restrict__ block_table, const int* __restrict__ seq_lens,
    const int* __restrict__ cu_seqlens_q, const float* __restrict__ k_scale,
    const float* __restrict__ v_scale, float* partial_o, float* partial_ml, int* counters,
    __nv_bfloat16* __restrict__ out, int num_tokens, int num_heads, int num_kv_heads, int head_dim,
    long long page_stride, float scale, int num_splits) {
  using namespace kern_attention_decode;
  __shared__ DecodeSmem sm;
  const int kvh = blockIdx.x, s = blockIdx.y, i = blockIdx.z;
  pdl_launch_dependents();
  if (kvh >= num_kv_heads || s >= num_splits || i >= num_tokens || num_tokens > kMaxDecodeRows ||
      num_kv_heads <= 0 || num_heads < num_kv_heads || num_heads / num_kv_heads > kMaxGroup || head_dim <= 0 ||
      head_dim > kMaxHeadDim || num_splits > kMaxSplits)
    return;
  pdl_wait();  // q, the cache and the lengths come from earlier launches
  const int n = max(causal_len(seq_lens, cu_seqlens_q, i), 0);
  const int len = (n + num_splits - 1) / num_splits;
  const int begin = min(s * len, n);
  const int end = min(begin + len, n);
  const int page0 = begin >> 4;
  const int npages = end > begin ? ((end - 1) >> 4) - page0 + 1 : 0;
  for (int p = threadIdx.x; p < min(npages, kMaxSplitPages); p += blockDim.x) sm.pages[p] = block_table[page0 + p];
  __syncthreads();
  const AttnArgs a{q, kv_cache, block_table, scale * *k_scale, *v_scale, num_heads, num_kv_heads,
                   head_dim, page_stride, static_cast<int64_t>(num_heads) * head_dim, 0};
  split_body(sm, a, kvh, i, s, num_splits, begin, end, page0, partial_o, partial_ml);
  finish_split(sm, a, kvh, i, num_splits, partial_o, partial_ml, counters, out);
}

/// kern_attention_decode_qkv_bf16(in bf16 qkv[B, qkv_stride], in bf16 q_norm_weight[D],
///     in bf16 k_norm_weight[D], in f32 cos_sin_cache[max_pos, D], inout ptr kv_cache (layer base),
///     in i32 block_tables[B, pages_per_seq], in i32 seq_lens[B], in f32 k_scale[1], in f32 v_scale[1],
///     out f32 partial_o[B, H*S*D], out f32 partial_ml[B, H*S*2], inout i32 counters[B * KV],
///     out bf16 out[B, H*D], i32 num_seqs, i32 num_heads, i32 num_kv_heads, i32 head_dim,
///     i64 page_stride, f32 scale, i32 pages_per_seq, i32 num_splits, i32 qkv_stride, f32 eps,
///     u8 rope_flags)
/// The batch-1 decode's q/k norm + RoPE + KV write + attention in one launch
/// (docs/kernels.md §13a): kern_qk_norm_rope_cache_bf16 followed by
/// kern_attention_decode_bf16 at one query per sequence, in their operation
/// order (the shared norm + RoPE helper and split_body). Row r is
/// the decode query of sequence r at position p = n_r - 1, n_r =
/// min(seq_lens[r], 16 pages_per_seq): block (kvh, s, r) normalises and rotates
/// the H / KV q heads of kv head kvh from the raw qkv row into shared memory;
/// the one block of (r, kvh) whose split holds p also writes the kv head's new
/// k (normalised, rotated, / k_scale) and v (/ v_scale) to p's cache slot
/// (page block_tables[r, p / 16], slot p % 16) and then reads it back in its
/// split like any other position. No other block reads position p of that kv
/// head, so no block depends on another's write. n_r <= 0 (a free batch row)
/// writes no cache slot and zeros to out; seq_lens[r] > 16 pages_per_seq
/// writes no cache slot either (the cpu twin reports it). Does nothing for B > 8, H / KV > 8,
/// D > 512 or odd, S > 64 (the cpu twin reports them). The launch must not
/// share the cache rows it writes with another launch in flight (PDL: the
/// writes come after griddepcontrol.wait, like every read).
/// Launch: grid [KV, S, B], block [128, 1, 1].
/// Bytes moved per row: those of kern_attention_decode_bf16 at one query (q
/// read as 2 (H + 2 KV) D from the qkv row instead of 2 H D) + 4 KV D (the new
/// k, v written) + 4 D (cos/sin row) + 4 D (norm weights); q is never written.
extern "C" __global__ void __launch_bounds__(128) kern_attention_decode_qkv_bf16(
    const __nv_bfloat16* __restrict__ qkv, const __nv_bfloat16* __restrict__ q_norm_weight,
    const __nv_bfloat16* __restrict__ k_norm_weight, const float* __restrict__ cos_sin_cache,
    __nv_bfloat16* kv_cache, const int* __restrict__ block_tables, const int* __restrict__ seq_lens,
    const float* __restrict__ k_scale, const float* __restrict__ v_scale, float* partial_o, float* partial_ml,
    int* counters, __nv_bfloat16* __restrict__ out, int num_seqs, int num_heads, int num_kv_heads, int head_dim,
    long long page_stride, float scale, int pages_per_seq, int num_splits, int qkv_stride, float eps,
    unsigned char rope_flags) {
  using namespace kern_attention_decode;
  __shared__ DecodeSmem sm;
  __shared__ __align__(16) __nv_bfloat16 q_smem[kMaxGroup * kMaxHeadDim];  // the group's normalised q heads
  const int kvh = blockIdx.x, s = blockIdx.y, r = blockIdx.z;
  pdl_launch_dependents();
  if (kvh >= num_kv_heads || s >= num_splits || r >= num_seqs || num_seqs > kMaxDecodeRows || num_kv_heads <= 0 ||
      num_heads < num_kv_heads || num_heads % num_kv_heads != 0 || num_heads / num_kv_heads > kMaxGroup ||
      head_dim <= 0 || head_dim > kMaxHeadDim || (head_dim & 1) != 0 || num_splits > kMaxSplits ||
      pages_per_seq < 0)
    return;
  pdl_wait();  // qkv, the cache and the lengths come from earlier launches
  const int* table = block_tables + static_cast<int64_t>(r) * pages_per_seq;
  const int n = max(min(seq_lens[r], pages_per_seq * 16), 0);
  const int len = (n + num_splits - 1) / num_splits;
  const int begin = min(s * len, n);
  const int end = min(begin + len, n);
  const int page0 = begin >> 4;
  const int npages = end > begin ? ((end - 1) >> 4) - page0 + 1 : 0;
  const int group = num_heads / num_kv_heads;
  const int pos = n == seq_lens[r] ? n - 1 : -1;  // the new token's position (-1: a free row, or past the table)
  __nv_bfloat16* slot = nullptr;
  if (pos >= begin && pos < end) {
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
                                          slot, q_smem, sm.o);
  for (int p = threadIdx.x; p < min(npages, kMaxSplitPages); p += blockDim.x) sm.pages[p] = table[page0 + p];
  __syncthreads();  // the pages, and every warp is past the prologue's use of sm.o
  const AttnArgs a{q_smem, kv_cache, table, scale * *k_scale, *v_scale, num_heads, num_kv_heads,
                   head_dim, page_stride, 0, kvh * group};
  split_body(sm, a, kvh, r, s, num_splits, begin, end, page0, partial_o, partial_ml);
  finish_split(sm, a, kvh, r, num_splits, partial_o, partial_ml, counters, out);
}
