// Decode GEMV / skinny GEMM family (docs/kernels.md §11): c[m, n] =
// epilogue(a'[m, k] . w[n, k]^T) for m <= 8, reading every weight byte once
// with 16-byte loads (several in flight per lane), f32 accumulation, an
// optional RMSNorm prologue (a' = bf16(rmsnorm(a) * norm_weight)) and one of
// four epilogues (store, accumulate, residual add, SiLU*mul).
//
// The reduction order of each output element is fixed by (k, splits) alone
// and never by m or by the block that happens to finish last, so a row
// computed at m = 8 equals the same row at m = 1 bit for bit, and reruns /
// graph replays are bit-identical (no float atomics):
//   * lane l of the warp owning a w row accumulates the 8-element groups
//     g = g0 + l + 32 t (t = 0, 1, ...) of its split, element by element, with
//     fmaf into one f32 per (a row, w row);
//   * the 32 lane sums are combined by an xor butterfly (16, 8, 4, 2, 1);
//   * with splits > 1 each split's sum goes to `partial`; the last block of a
//     column tile to finish (an integer counter per tile) adds the splits in
//     order 0, 1, ..., applies the epilogue and resets the counter to 0.
// kernels-src/cpu/gemv.cpp replays exactly this order.
//
// Launch: grid [ceil(n / 8), splits, 1], block [128, 1, 1]; dynamic shared
// memory m * k * 2 bytes for the RMSNorm variants (the normalised a rows),
// 0 otherwise. Block (x, s) owns output columns [8x, 8x + 8) and split s.
#include <math_constants.h>

#include <climits>

#include "argmax_best.cuh"
#include "kern_cuda_common.cuh"

using namespace kern_cuda;

// A named namespace, not an anonymous one: functions declaring __shared__
// variables in an anonymous namespace get path-dependent _INTERNAL_ names,
// which would make the fatbin's bytes (and its sha256 pin) depend on the
// build directory (test/examples/kernel_pins_test.py).
namespace kern_gemv {

constexpr int kMaxM = 8;        // rows of a (decode: 1; speculative verify: up to 8)
constexpr int kCols = 8;        // output columns per block
constexpr int kWarps = 4;       // block [128, 1, 1]: kWarps * w rows per warp = kCols (x2 for SiLU)
constexpr int kUnroll = 4;      // 16-byte w loads in flight per lane per w row (m = 1)
constexpr int kUnrollM = 2;     // the same for 2 <= m <= 8 (registers go to the 8 rows' accumulators)

enum class Epi { kStore, kAcc, kResidual, kSiluMul, kArgmax };

/// The kernel's arguments, gathered once (cold) so the device code stays short.
struct Args {
  const __nv_bfloat16* a;
  const __nv_bfloat16* norm_weight;  ///< RMSNorm prologue only
  const __nv_bfloat16* w;
  const __nv_bfloat16* residual;     ///< kResidual only
  __nv_bfloat16* c;
  float* partial;                    ///< [splits, m, w rows] f32 (splits > 1)
  int* counters;                     ///< [ceil(n / 8)] (+ 1 for kArgmax) zero between launches
  float* argmax_val;                 ///< kArgmax: [m, ceil(n / 8)] best bf16 logit of the tile
  int* argmax_idx;                   ///< kArgmax: [m, ceil(n / 8)] its column (smallest on ties)
  int64_t* next_token;               ///< kArgmax: [m] the row's argmax over all tiles
  int m, n, k, lda, ldc, splits;
  float eps;
};

/// W row of local row `r` of the column tile starting at c0: one row per
/// column, or for SiLU*mul (w = [gate (n rows); up (n rows)], the usual
/// fused gate_up_proj) the gate row c0 + col or the up row n + c0 + col.
template <Epi kE>
__device__ __forceinline__ int w_row_of(int n, int c0, int r) {
  if constexpr (kE == Epi::kSiluMul) {
    // Warp w owns columns c0 + 2w, c0 + 2w + 1: rows gate, gate, up, up.
    const int col = c0 + 2 * (r >> 2) + (r & 1);
    return (r & 2) ? n + col : col;
  } else {
    return c0 + r;
  }
}

/// RMSNorm prologue: a'[i] = bf16(a[i] * (1 / sqrt(mean(a[i]^2) + eps)) * nw)
/// for every row i < m, into shared memory (stride k). Sum of squares: thread
/// t takes groups t, t + 128, ... (8 elements each, fmaf), then block_sum.
__device__ void norm_prologue(const Args& g, __nv_bfloat16* sa) {
  const bool vec = (g.k & 7) == 0 && (g.lda & 7) == 0 && aligned_to(g.a, 16) && aligned_to(g.norm_weight, 16);
  const int groups = (g.k + 7) >> 3;
  for (int i = 0; i < g.m; ++i) {
    const __nv_bfloat16* ar = g.a + static_cast<int64_t>(i) * g.lda;
    float ss = 0.0f;
    for (int gr = threadIdx.x; gr < groups; gr += blockDim.x) {
      float x[8];
      if (vec) {
        load8(ar + 8 * gr, x);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) x[e] = 8 * gr + e < g.k ? bf16_to_f32(ar[8 * gr + e]) : 0.0f;
      }
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (vec || 8 * gr + e < g.k) ss = fmaf(x[e], x[e], ss);
    }
    const float inv = 1.0f / sqrtf(block_sum(ss) / static_cast<float>(g.k) + g.eps);
    __nv_bfloat16* out = sa + static_cast<int64_t>(i) * g.k;
    for (int gr = threadIdx.x; gr < groups; gr += blockDim.x) {
      float x[8], nw[8], y[8];
      if (vec) {
        load8(ar + 8 * gr, x);
        load8_ro(g.norm_weight + 8 * gr, nw);
#pragma unroll
        for (int e = 0; e < 8; ++e) y[e] = x[e] * inv * nw[e];
        store8(out + 8 * gr, y);
      } else {
        for (int e = 0; e < 8 && 8 * gr + e < g.k; ++e) {
          const int x0 = 8 * gr + e;
          out[x0] = f32_to_bf16(bf16_to_f32(ar[x0]) * inv * bf16_to_f32(g.norm_weight[x0]));
        }
      }
    }
  }
  __syncthreads();
}

/// f32 of the epilogue's inputs -> the stored bf16 (acc: old c; residual: r).
template <Epi kE>
__device__ __forceinline__ void epilogue(const Args& g, int i, int col, float v, float up) {
  __nv_bfloat16* cp = g.c + static_cast<int64_t>(i) * g.ldc + col;
  if constexpr (kE == Epi::kStore || kE == Epi::kArgmax) {
    *cp = f32_to_bf16(v);
  } else if constexpr (kE == Epi::kAcc) {
    *cp = f32_to_bf16(bf16_to_f32(*cp) + v);
  } else if constexpr (kE == Epi::kResidual) {
    *cp = f32_to_bf16(bf16_to_f32(g.residual[static_cast<int64_t>(i) * g.ldc + col]) + v);
  } else {
    *cp = f32_to_bf16(v / (1.0f + expf(-v)) * up);
  }
}

/// w rows one warp owns: one per output column (2), or gate and up rows of
/// two columns (4) for SiLU*mul; kWarps of them cover the kCols columns.
template <Epi kE>
constexpr int kRowsPerWarp = kE == Epi::kSiluMul ? 4 : 2;

/// A range [begin, end) of 8-element groups of the k axis.
struct GroupRange {
  int begin, end;
};

/// This split's groups of the ceil(k / 8) (ceil(groups / splits) each; empty past the end).
__device__ __forceinline__ GroupRange split_groups(const Args& g, int split) {
  const int groups = (g.k + 7) >> 3;
  const int per_split = (groups + g.splits - 1) / g.splits;
  const int gb = min(groups, split * per_split);
  return GroupRange{gb, min(groups, gb + per_split)};
}

/// The w rows of this warp (wrow[r], a row index of w) and whether each
/// feeds a column inside the tile (live[r]: column < nt = columns left).
template <Epi kE>
__device__ __forceinline__ void warp_w_rows(const Args& g, int warp, int c0, int nt, int (&wrow)[kRowsPerWarp<kE>],
                                            bool (&live)[kRowsPerWarp<kE>]) {
  constexpr int kR = kRowsPerWarp<kE>;
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const int local = warp * kR + r;
    // Columns of this local row: c0 + local (plain) or c0 + 2 warp + (r & 1) (SiLU).
    const int col = kE == Epi::kSiluMul ? 2 * warp + (r & 1) : local;
    live[r] = col < nt;
    wrow[r] = live[r] ? w_row_of<kE>(g.n, c0, local) : 0;
  }
}

/// Prefetches into L2 the first kUnroll 16-byte groups (gb + lane + 32 u)
/// of each live w row of this lane, below ge.
template <int kR>
__device__ __forceinline__ void prefetch_w(const Args& g, const int (&wrow)[kR], const bool (&live)[kR], int lane,
                                           int gb, int ge) {
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (live[r] && gb + lane + 32 * u < ge)
        prefetch_l2(g.w + static_cast<int64_t>(wrow[r]) * g.k + 8 * (gb + lane + 32 * u));
}

/// Loads wv[r][u] = the 16-byte group gr + 32 u (8 bf16 at element
/// 8 (gr + 32 u)) of w row wrow[r] through the read-only path; zero when the
/// row is not live. Order: row by row, kU groups each.
template <int kR, int kU>
__device__ __forceinline__ void load_w_groups(uint4 (&wv)[kR][kU], const Args& g, const int (&wrow)[kR],
                                              const bool (&live)[kR], int gr) {
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int u = 0; u < kU; ++u)
      wv[r][u] = live[r] ? __ldg(reinterpret_cast<const uint4*>(g.w + static_cast<int64_t>(wrow[r]) * g.k +
                                                                8 * (gr + 32 * u)))
                         : make_uint4(0, 0, 0, 0);
}

/// acc[r][i] += a[i, 8 (gr + 32 u) + 0..7] . (w group wv[r][u]) for every a
/// row i < m (lda elements apart), element by element with fmaf.
template <int kR, int kU, int kM>
__device__ __forceinline__ void fma_group(float (&acc)[kR][kM], const uint4 (&wv)[kR][kU], int u,
                                          const __nv_bfloat16* a, int lda, const Args& g, int gr) {
#pragma unroll
  for (int i = 0; i < kM; ++i) {
    if (i >= g.m) break;
    float x[8];
    load8(a + static_cast<int64_t>(i) * lda + 8 * (gr + 32 * u), x);
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      float wf[8];
      unpack8(wv[r][u], wf);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][i] = fmaf(x[e], wf[e], acc[r][i]);
    }
  }
}

/// Scalar path (any k, lda, alignment): this lane's groups gb + lane + 32 t
/// below ge into acc in the same element order as the vector path, one bf16
/// at a time, stopping at k.
template <int kR, int kM>
__device__ __forceinline__ void accumulate_scalar(float (&acc)[kR][kM], const Args& g, const __nv_bfloat16* a,
                                                  int lda, const int (&wrow)[kR], const bool (&live)[kR], int lane,
                                                  int gb, int ge) {
  for (int gr = gb + lane; gr < ge; gr += 32) {
    for (int e = 0; e < 8; ++e) {
      const int x0 = 8 * gr + e;
      if (x0 >= g.k) break;
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (!live[r]) continue;
        const float wf = bf16_to_f32(g.w[static_cast<int64_t>(wrow[r]) * g.k + x0]);
#pragma unroll
        for (int i = 0; i < kM; ++i) {
          if (i >= g.m) break;
          acc[r][i] = fmaf(bf16_to_f32(a[static_cast<int64_t>(i) * lda + x0]), wf, acc[r][i]);
        }
      }
    }
  }
}

/// splits > 1, lane 0 of each warp: this split's sums of the warp's live w
/// rows to partial[split, i, wrow[r]] (f32, w_rows_total per a row i < m).
template <int kR, int kM>
__device__ __forceinline__ void store_partials(const Args& g, const float (&acc)[kR][kM], const int (&wrow)[kR],
                                               const bool (&live)[kR], int split, int w_rows_total) {
#pragma unroll
  for (int r = 0; r < kR; ++r)
    if (live[r])
#pragma unroll
      for (int i = 0; i < kM; ++i)
        if (i < g.m) g.partial[(static_cast<int64_t>(split) * g.m + i) * w_rows_total + wrow[r]] = acc[r][i];
}

/// splits > 1, lane 0 of each warp in the tile's last block: acc[r][i] =
/// the sum of partial[sp, i, wrow[r]] over splits sp = 0, 1, ... in order
/// (read through L2: the other blocks wrote them).
template <int kR, int kM>
__device__ __forceinline__ void sum_partials(float (&acc)[kR][kM], const Args& g, const int (&wrow)[kR],
                                             const bool (&live)[kR], int w_rows_total) {
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    if (!live[r]) continue;
#pragma unroll
    for (int i = 0; i < kM; ++i) {
      if (i >= g.m) break;
      const float* p = g.partial + static_cast<int64_t>(i) * w_rows_total + wrow[r];
      const int64_t step = static_cast<int64_t>(g.m) * w_rows_total;
      float s = __ldcg(p);
      for (int sp = 1; sp < g.splits; ++sp) s += __ldcg(p + sp * step);
      acc[r][i] = s;
    }
  }
}

/// kArgmax epilogue (whole block): stores the logits as bf16 and writes each
/// a row's best (value, column) of the tile to argmax_val / argmax_idx
/// [m, gridDim.x], over the bf16 values the unfused argmax would read:
/// greater value, then smaller column; NaN never wins; an all-NaN tile gives
/// (-inf, INT_MAX). best_v / best_i: the block's shared per-warp bests.
template <int kR, int kM>
__device__ __forceinline__ void argmax_epilogue(const Args& g, const float (&acc)[kR][kM],
                                                const bool (&live)[kR], int lane, int warp, int c0,
                                                float (&best_v)[kWarps][kMaxM], int (&best_i)[kWarps][kMaxM]) {
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < kM; ++i) {
      if (i >= g.m) break;
      float bv = -CUDART_INF_F;
      int bi = INT_MAX;
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (!live[r]) continue;
        const int col = c0 + warp * kR + r;
        epilogue<Epi::kArgmax>(g, i, col, acc[r][i], 0.0f);
        const float v = bf16_to_f32(f32_to_bf16(acc[r][i]));
        if (v > bv || (v == bv && col < bi)) bv = v, bi = col;
      }
      best_v[warp][i] = bv;
      best_i[warp][i] = bi;
    }
  }
  __syncthreads();
  if (threadIdx.x < g.m) {
    const int i = threadIdx.x;
    float bv = -CUDART_INF_F;
    int bi = INT_MAX;
    for (int w = 0; w < kWarps; ++w)
      if (best_v[w][i] > bv || (best_v[w][i] == bv && best_i[w][i] < bi)) bv = best_v[w][i], bi = best_i[w][i];
    const int64_t at = static_cast<int64_t>(i) * gridDim.x + blockIdx.x;
    g.argmax_val[at] = bv;
    g.argmax_idx[at] = bi;
  }
}

/// kArgmax, after argmax_epilogue (whole block): the last of the ceil(n / 8)
/// tile blocks to publish its partials (integer counter counters[ceil(n / 8)],
/// after the split-K tile counters; docs/kernels.md "Cooperating blocks")
/// reduces every tile's (value, column) of each row, through L2, into
/// next_token[i] and resets the counter to 0. The order is a total order
/// (kern_argmax::consider), so the token equals kern_argmax_reduce's.
__device__ __forceinline__ void argmax_last_block(const Args& g, int& last_block) {
  constexpr int kLoads = 8;  // pairs loaded per thread before any is compared
  const int tiles = (g.n + kCols - 1) / kCols;
  __threadfence();  // this block's partials are visible before its count
  __syncthreads();
  if (threadIdx.x == 0) last_block = atomicAdd(&g.counters[tiles], 1) == tiles - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();  // read the other blocks' partials after seeing their counts
  for (int i = 0; i < g.m; ++i) {
    const float* pv = g.argmax_val + static_cast<int64_t>(i) * gridDim.x;
    const int* pi = g.argmax_idx + static_cast<int64_t>(i) * gridDim.x;
    kern_argmax::Best b{-CUDART_INF_F, INT_MAX};
    const int stride = blockDim.x;
    int t = threadIdx.x;
    for (; t + (kLoads - 1) * stride < tiles; t += kLoads * stride) {
      float v[kLoads];
      int ix[kLoads];
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        v[u] = __ldcg(pv + t + u * stride);
        ix[u] = __ldcg(pi + t + u * stride);
      }
#pragma unroll
      for (int u = 0; u < kLoads; ++u) kern_argmax::consider(b, v[u], ix[u]);
    }
    for (; t < tiles; t += stride) kern_argmax::consider(b, __ldcg(pv + t), __ldcg(pi + t));
    b = kern_argmax::block_best(b);
    if (threadIdx.x == 0) g.next_token[i] = b.i;
    __syncthreads();  // block_best's shared slots are rewritten for the next row
  }
  if (threadIdx.x == 0) g.counters[tiles] = 0;  // ready for the next launch / replay
}

/// The other epilogues (lane 0 of each warp): c[i, col] for this warp's live
/// columns and every a row i < m; SiLU*mul pairs gate row h with up row h + 2.
template <Epi kE, int kM>
__device__ __forceinline__ void store_epilogue(const Args& g, const float (&acc)[kRowsPerWarp<kE>][kM],
                                               const bool (&live)[kRowsPerWarp<kE>], int warp, int c0) {
  constexpr int kR = kRowsPerWarp<kE>;
  if constexpr (kE == Epi::kSiluMul) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!live[h]) continue;
#pragma unroll
      for (int i = 0; i < kM; ++i)
        if (i < g.m) epilogue<kE>(g, i, c0 + 2 * warp + h, acc[h][i], acc[h + 2][i]);
    }
  } else {
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      if (!live[r]) continue;
#pragma unroll
      for (int i = 0; i < kM; ++i)
        if (i < g.m) epilogue<kE>(g, i, c0 + warp * kR + r, acc[r][i], 0.0f);
    }
  }
}

/// acc = 0 (every w row r, every a row slot i).
template <int kR, int kM>
__device__ __forceinline__ void zero_acc(float (&acc)[kR][kM]) {
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int i = 0; i < kM; ++i) acc[r][i] = 0.0f;
}

/// acc[r][i] = the sum of the 32 lanes' acc[r][i] (xor butterfly 16, 8, 4,
/// 2, 1): every lane gets the same sum.
template <int kR, int kM>
__device__ __forceinline__ void reduce_lanes(float (&acc)[kR][kM]) {
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int i = 0; i < kM; ++i) acc[r][i] = warp_sum(acc[r][i]);
}

/// One block of the GEMV: column tile [c0, c0 + 8) = blockIdx.x * 8, split
/// blockIdx.y; warp w owns kRowsPerWarp w rows, lane l their groups
/// gb + l + 32 t (see the file comment for the reduction order).
template <bool kNorm, Epi kE, int kM, int kU>
__device__ void gemv_rows(const Args& g) {
  constexpr int kR = kRowsPerWarp<kE>;  // w rows per warp
  static_assert(kWarps * kR == (kE == Epi::kSiluMul ? 2 : 1) * kCols);
  KERN_DYNAMIC_SHARED(unsigned char, smem_raw);
  __shared__ int last_block;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int c0 = blockIdx.x * kCols;
  const int split = blockIdx.y;
  if (c0 >= g.n || g.m <= 0 || g.m > kMaxM || g.splits < 1 || g.k < 0) return;
  // The normalised rows need m k 2 bytes of dynamic shared memory; the plan
  // sizes it for the rows its program launches (docs/kernels.md §11) and the
  // cpu twin reports less, so a launch with more rows is an error here too.
  if (kNorm && static_cast<uint64_t>(g.m) * g.k * 2 > dynamic_shared_bytes()) __trap();
  const int nt = min(kCols, g.n - c0);
  const int w_rows_total = kE == Epi::kSiluMul ? 2 * g.n : g.n;

  const GroupRange range = split_groups(g, split);  // this split's groups [gb, ge)
  const int gb = range.begin, ge = range.end;
  int wrow[kR];
  bool live[kR];
  warp_w_rows<kE>(g, warp, c0, nt, wrow, live);

  // PDL: weights are never written by a launch, so their first lines stream
  // into L2 while the previous kernel finishes; a, residual, c, partial and
  // counters are touched only after pdl_wait().
  pdl_launch_dependents();
  prefetch_w(g, wrow, live, lane, gb, ge);
  pdl_wait();

  const __nv_bfloat16* a = g.a;
  int lda = g.lda;
  if constexpr (kNorm) {
    __nv_bfloat16* sa = reinterpret_cast<__nv_bfloat16*>(smem_raw);
    norm_prologue(g, sa);
    a = sa;
    lda = g.k;
  }

  float acc[kR][kM];
  zero_acc(acc);
  const bool vec = (g.k & 7) == 0 && (lda & 7) == 0 && aligned_to(a, 16) && aligned_to(g.w, 16);
  if (vec) {
    int gr = gb + lane;
    // kU groups per w row in flight, then consumed in group order.
    for (; gr + 32 * (kU - 1) < ge; gr += 32 * kU) {
      uint4 wv[kR][kU];
      load_w_groups(wv, g, wrow, live, gr);
#pragma unroll
      for (int u = 0; u < kU; ++u) fma_group(acc, wv, u, a, lda, g, gr);
    }
    for (; gr < ge; gr += 32) {
      uint4 wv[kR][1];
      load_w_groups(wv, g, wrow, live, gr);
      fma_group(acc, wv, 0, a, lda, g, gr);
    }
  } else {
    accumulate_scalar(acc, g, a, lda, wrow, live, lane, gb, ge);
  }
  reduce_lanes(acc);  // every lane: the same sums

  if (g.splits > 1) {
    if (lane == 0) store_partials(g, acc, wrow, live, split, w_rows_total);
    __threadfence();  // this block's partials are visible before its count
    __syncthreads();
    if (threadIdx.x == 0) last_block = atomicAdd(&g.counters[blockIdx.x], 1) == g.splits - 1;
    __syncthreads();
    if (!last_block) return;
    __threadfence();  // read the other blocks' partials after seeing their counts
    if (lane == 0) sum_partials(acc, g, wrow, live, w_rows_total);
    if (threadIdx.x == 0) g.counters[blockIdx.x] = 0;  // ready for the next launch / replay
  }
  if constexpr (kE == Epi::kArgmax) {
    __shared__ float best_v[kWarps][kMaxM];
    __shared__ int best_i[kWarps][kMaxM];
    argmax_epilogue(g, acc, live, lane, warp, c0, best_v, best_i);
    argmax_last_block(g, last_block);
    return;
  }
  if (lane != 0) return;
  store_epilogue<kE>(g, acc, live, warp, c0);
}

/// The GEMV with the a-row count bucketed at compile time: m = 1 (decode)
/// holds one accumulator per w row and keeps kUnroll weight loads in
/// flight; 2 <= m <= 8 (speculative verify) holds eight and kUnrollM loads
/// (each weight group feeds up to 8 rows there). The per-element operation
/// order is the same in both (group order, the butterfly, the splits in
/// order), so a row's bits do not depend on the bucket.
template <bool kNorm, Epi kE>
__device__ void gemv(const Args& g) {
  if (g.m == 1) gemv_rows<kNorm, kE, 1, kUnroll>(g);
  else gemv_rows<kNorm, kE, kMaxM, kUnrollM>(g);
}

}  // namespace kern_gemv

using namespace kern_gemv;

// Parameter ABIs (docs/kernels.md §11). Common tail: partial, counters,
// i32 m, n, k, lda, ldc, splits. Bytes moved: w once (2 n k; 4 n k for
// SiLU*mul), a m k 2 per block from L2, c 2 m n (x2 for acc / residual),
// partial 8 splits m n when split.

/// Defines entry point `name` with the plain ABI (a, w, c, partial,
/// counters, m, n, k, lda, ldc, splits) running gemv<false, kE>.
#define KERN_GEMV_PLAIN_ENTRY(name, kE)                                                                        \
  extern "C" __global__ void __launch_bounds__(128) name(                                                      \
      const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* c, float* partial,          \
      int* counters, int m, int n, int k, int lda, int ldc, int splits) {                                      \
    gemv<false, kE>(Args{a, nullptr, w, nullptr, c, partial, counters, nullptr, nullptr, nullptr, m, n, k, lda,   \
                         ldc, splits, 0.0f});                                                                  \
  }

/// Defines entry point `name` with the RMSNorm-prologue ABI (a,
/// norm_weight, w, c, partial, counters, m, n, k, lda, ldc, splits, eps)
/// running gemv<true, kE>.
#define KERN_GEMV_RMSNORM_ENTRY(name, kE)                                                                      \
  extern "C" __global__ void __launch_bounds__(128) name(                                                      \
      const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ norm_weight,                                  \
      const __nv_bfloat16* __restrict__ w, __nv_bfloat16* c, float* partial, int* counters, int m, int n,     \
      int k, int lda, int ldc, int splits, float eps) {                                                        \
    gemv<true, kE>(Args{a, norm_weight, w, nullptr, c, partial, counters, nullptr, nullptr, nullptr, m, n, k,     \
                        lda, ldc, splits, eps});                                                               \
  }

/// kern_gemv_bf16: c = bf16(a . w^T).
KERN_GEMV_PLAIN_ENTRY(kern_gemv_bf16, Epi::kStore)

/// kern_gemv_acc_bf16 (beta = 1): c = bf16(c + a . w^T).
KERN_GEMV_PLAIN_ENTRY(kern_gemv_acc_bf16, Epi::kAcc)

/// kern_gemv_residual_bf16: c = bf16(residual + a . w^T); c may alias residual.
extern "C" __global__ void __launch_bounds__(128) kern_gemv_residual_bf16(
    const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ w, const __nv_bfloat16* residual, __nv_bfloat16* c,
    float* partial, int* counters, int m, int n, int k, int lda, int ldc, int splits) {
  gemv<false, Epi::kResidual>(Args{a, nullptr, w, residual, c, partial, counters, nullptr, nullptr, nullptr,
                       m, n, k, lda, ldc, splits, 0.0f});
}

/// kern_gemv_silu_mul_bf16: c[:, j] = bf16(silu(a . gate_j) * (a . up_j)),
/// w [2n, k] = [gate; up] (row j and row n + j).
KERN_GEMV_PLAIN_ENTRY(kern_gemv_silu_mul_bf16, Epi::kSiluMul)

/// kern_gemv_rmsnorm_bf16: c = bf16(bf16(rmsnorm(a) * norm_weight) . w^T).
KERN_GEMV_RMSNORM_ENTRY(kern_gemv_rmsnorm_bf16, Epi::kStore)

/// kern_gemv_rmsnorm_silu_mul_bf16: the SiLU*mul epilogue over the RMSNorm prologue.
KERN_GEMV_RMSNORM_ENTRY(kern_gemv_rmsnorm_silu_mul_bf16, Epi::kSiluMul)

/// kern_gemv_rmsnorm_argmax_bf16: lm_head after the final norm with the
/// argmax. Params: a, norm_weight, w, out c (logits, bf16), partial, inout
/// counters [ceil(n / 8) + 1], out f32 argmax_val [m, grid.x], out i32
/// argmax_idx [m, grid.x] (each tile's best), out i64 next_token [m], i32 m,
/// n, k, lda, ldc, splits, f32 eps. The last tile block to finish reduces the
/// tiles' partials into next_token (counter counters[ceil(n / 8)]).
/// Bytes moved: the gemv's + 8 m ceil(n / 8) (tile partials written and read
/// back from L2) + 8 m (next_token).
extern "C" __global__ void __launch_bounds__(128) kern_gemv_rmsnorm_argmax_bf16(
    const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ norm_weight, const __nv_bfloat16* __restrict__ w,
    __nv_bfloat16* c, float* partial, int* counters, float* argmax_val, int* argmax_idx, int64_t* next_token, int m,
    int n, int k, int lda, int ldc, int splits, float eps) {
  gemv<true, Epi::kArgmax>(Args{a, norm_weight, w, nullptr, c, partial, counters, argmax_val, argmax_idx, next_token,
                                m, n, k, lda, ldc, splits, eps});
}
