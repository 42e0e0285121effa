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
constexpr int kUnroll = 4;      // 16-byte w loads in flight per lane per w row

enum class Epi { kStore, kAcc, kResidual, kSiluMul, kArgmax };

/// The kernel's arguments, gathered once (cold) so the device code stays short.
struct Args {
  const __nv_bfloat16* a;
  const __nv_bfloat16* norm_weight;  ///< RMSNorm prologue only
  const __nv_bfloat16* w;
  const __nv_bfloat16* residual;     ///< kResidual only
  __nv_bfloat16* c;
  float* partial;                    ///< [splits, m, w rows] f32 (splits > 1)
  int* counters;                     ///< [ceil(n / 8)] zero between launches
  float* argmax_val;                 ///< kArgmax: [m, ceil(n / 8)] best bf16 logit of the tile
  int* argmax_idx;                   ///< kArgmax: [m, ceil(n / 8)] its column (smallest on ties)
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

template <bool kNorm, Epi kE>
__device__ void gemv(const Args& g) {
  constexpr int kR = kE == Epi::kSiluMul ? 4 : 2;  // w rows per warp
  static_assert(kWarps * kR == (kE == Epi::kSiluMul ? 2 : 1) * kCols);
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int last_block;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int c0 = blockIdx.x * kCols;
  const int split = blockIdx.y;
  if (c0 >= g.n || g.m <= 0 || g.m > kMaxM || g.splits < 1 || g.k < 0) return;
  const int nt = min(kCols, g.n - c0);
  const int w_rows_total = kE == Epi::kSiluMul ? 2 * g.n : g.n;

  // This split's groups [gb, ge) of 8 elements.
  const int groups = (g.k + 7) >> 3;
  const int per_split = (groups + g.splits - 1) / g.splits;
  const int gb = min(groups, split * per_split);
  const int ge = min(groups, gb + per_split);

  int wrow[kR];
  bool live[kR];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const int local = warp * kR + r;
    // Columns of this local row: c0 + local (plain) or c0 + 2 warp + (r & 1) (SiLU).
    const int col = kE == Epi::kSiluMul ? 2 * warp + (r & 1) : local;
    live[r] = col < nt;
    wrow[r] = live[r] ? w_row_of<kE>(g.n, c0, local) : 0;
  }

  // PDL: weights are never written by a launch, so their first lines stream
  // into L2 while the previous kernel finishes; a, residual, c, partial and
  // counters are touched only after pdl_wait().
  pdl_launch_dependents();
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (live[r] && gb + lane + 32 * u < ge)
        prefetch_l2(g.w + static_cast<int64_t>(wrow[r]) * g.k + 8 * (gb + lane + 32 * u));
  pdl_wait();

  const __nv_bfloat16* a = g.a;
  int lda = g.lda;
  if constexpr (kNorm) {
    __nv_bfloat16* sa = reinterpret_cast<__nv_bfloat16*>(smem_raw);
    norm_prologue(g, sa);
    a = sa;
    lda = g.k;
  }

  float acc[kR][kMaxM];
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int i = 0; i < kMaxM; ++i) acc[r][i] = 0.0f;

  const bool vec = (g.k & 7) == 0 && (lda & 7) == 0 && aligned_to(a, 16) && aligned_to(g.w, 16);
  if (vec) {
    int gr = gb + lane;
    // kUnroll groups per w row in flight, then consumed in group order.
    for (; gr + 32 * (kUnroll - 1) < ge; gr += 32 * kUnroll) {
      uint4 wv[kR][kUnroll];
#pragma unroll
      for (int r = 0; r < kR; ++r)
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          wv[r][u] = live[r] ? __ldg(reinterpret_cast<const uint4*>(g.w + static_cast<int64_t>(wrow[r]) * g.k +
                                                                    8 * (gr + 32 * u)))
                             : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int i = 0; i < kMaxM; ++i) {
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
    }
    for (; gr < ge; gr += 32) {
      uint4 wv[kR];
#pragma unroll
      for (int r = 0; r < kR; ++r)
        wv[r] = live[r] ? __ldg(reinterpret_cast<const uint4*>(g.w + static_cast<int64_t>(wrow[r]) * g.k + 8 * gr))
                        : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int i = 0; i < kMaxM; ++i) {
        if (i >= g.m) break;
        float x[8];
        load8(a + static_cast<int64_t>(i) * lda + 8 * gr, x);
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          float wf[8];
          unpack8(wv[r], wf);
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[r][i] = fmaf(x[e], wf[e], acc[r][i]);
        }
      }
    }
  } else {
    for (int gr = gb + lane; gr < ge; gr += 32) {
      for (int e = 0; e < 8; ++e) {
        const int x0 = 8 * gr + e;
        if (x0 >= g.k) break;
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          if (!live[r]) continue;
          const float wf = bf16_to_f32(g.w[static_cast<int64_t>(wrow[r]) * g.k + x0]);
#pragma unroll
          for (int i = 0; i < kMaxM; ++i) {
            if (i >= g.m) break;
            acc[r][i] = fmaf(bf16_to_f32(a[static_cast<int64_t>(i) * lda + x0]), wf, acc[r][i]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int i = 0; i < kMaxM; ++i) acc[r][i] = warp_sum(acc[r][i]);  // every lane: the same sum

  if (g.splits > 1) {
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < kR; ++r)
        if (live[r])
#pragma unroll
          for (int i = 0; i < kMaxM; ++i)
            if (i < g.m) g.partial[(static_cast<int64_t>(split) * g.m + i) * w_rows_total + wrow[r]] = acc[r][i];
    }
    __threadfence();  // this block's partials are visible before its count
    __syncthreads();
    if (threadIdx.x == 0) last_block = atomicAdd(&g.counters[blockIdx.x], 1) == g.splits - 1;
    __syncthreads();
    if (!last_block) return;
    __threadfence();  // read the other blocks' partials after seeing their counts
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (!live[r]) continue;
#pragma unroll
        for (int i = 0; i < kMaxM; ++i) {
          if (i >= g.m) break;
          const float* p = g.partial + static_cast<int64_t>(i) * w_rows_total + wrow[r];
          const int64_t step = static_cast<int64_t>(g.m) * w_rows_total;
          float s = __ldcg(p);
          for (int sp = 1; sp < g.splits; ++sp) s += __ldcg(p + sp * step);
          acc[r][i] = s;
        }
      }
    }
    if (threadIdx.x == 0) g.counters[blockIdx.x] = 0;  // ready for the next launch / replay
  }
  if constexpr (kE == Epi::kArgmax) {
    // Logits stored as bf16; the tile's best (value, column) per row, over
    // the bf16 values the unfused argmax would read: greater value, then
    // smaller column; NaN never wins; an all-NaN tile gives (-inf, INT_MAX).
    __shared__ float best_v[kWarps][kMaxM];
    __shared__ int best_i[kWarps][kMaxM];
    if (lane == 0) {
#pragma unroll
      for (int i = 0; i < kMaxM; ++i) {
        if (i >= g.m) break;
        float bv = -CUDART_INF_F;
        int bi = INT_MAX;
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          if (!live[r]) continue;
          const int col = c0 + warp * kR + r;
          epilogue<kE>(g, i, col, acc[r][i], 0.0f);
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
    return;
  }
  if (lane != 0) return;
  if constexpr (kE == Epi::kSiluMul) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!live[h]) continue;
#pragma unroll
      for (int i = 0; i < kMaxM; ++i)
        if (i < g.m) epilogue<kE>(g, i, c0 + 2 * warp + h, acc[h][i], acc[h + 2][i]);
    }
  } else {
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      if (!live[r]) continue;
#pragma unroll
      for (int i = 0; i < kMaxM; ++i)
        if (i < g.m) epilogue<kE>(g, i, c0 + warp * kR + r, acc[r][i], 0.0f);
    }
  }
}

}  // namespace kern_gemv

using namespace kern_gemv;

// Parameter ABIs (docs/kernels.md §11). Common tail: partial, counters,
// i32 m, n, k, lda, ldc, splits. Bytes moved: w once (2 n k; 4 n k for
// SiLU*mul), a m k 2 per block from L2, c 2 m n (x2 for acc / residual),
// partial 8 splits m n when split.

/// kern_gemv_bf16: c = bf16(a . w^T).
extern "C" __global__ void __launch_bounds__(128) kern_gemv_bf16(
    const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* c, float* partial, int* counters,
    int m, int n, int k, int lda, int ldc, int splits) {
  gemv<false, Epi::kStore>(Args{a, nullptr, w, nullptr, c, partial, counters, nullptr, nullptr,
                       m, n, k, lda, ldc, splits, 0.0f});
}

/// kern_gemv_acc_bf16 (beta = 1): c = bf16(c + a . w^T).
extern "C" __global__ void __launch_bounds__(128) kern_gemv_acc_bf16(
    const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* c, float* partial, int* counters,
    int m, int n, int k, int lda, int ldc, int splits) {
  gemv<false, Epi::kAcc>(Args{a, nullptr, w, nullptr, c, partial, counters, nullptr, nullptr,
                       m, n, k, lda, ldc, splits, 0.0f});
}

/// kern_gemv_residual_bf16: c = bf16(residual + a . w^T); c may alias residual.
extern "C" __global__ void __launch_bounds__(128) kern_gemv_residual_bf16(
    const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ w, const __nv_bfloat16* residual, __nv_bfloat16* c,
    float* partial, int* counters, int m, int n, int k, int lda, int ldc, int splits) {
  gemv<false, Epi::kResidual>(Args{a, nullptr, w, residual, c, partial, counters, nullptr, nullptr,
                       m, n, k, lda, ldc, splits, 0.0f});
}

/// kern_gemv_silu_mul_bf16: c[:, j] = bf16(silu(a . gate_j) * (a . up_j)),
/// w [2n, k] = [gate; up] (row j and row n + j).
extern "C" __global__ void __launch_bounds__(128) kern_gemv_silu_mul_bf16(
    const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* c, float* partial, int* counters,
    int m, int n, int k, int lda, int ldc, int splits) {
  gemv<false, Epi::kSiluMul>(Args{a, nullptr, w, nullptr, c, partial, counters, nullptr, nullptr,
                       m, n, k, lda, ldc, splits, 0.0f});
}

/// kern_gemv_rmsnorm_bf16: c = bf16(bf16(rmsnorm(a) * norm_weight) . w^T).
extern "C" __global__ void __launch_bounds__(128) kern_gemv_rmsnorm_bf16(
    const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ norm_weight, const __nv_bfloat16* __restrict__ w,
    __nv_bfloat16* c, float* partial, int* counters, int m, int n, int k, int lda, int ldc, int splits, float eps) {
  gemv<true, Epi::kStore>(Args{a, norm_weight, w, nullptr, c, partial, counters, nullptr, nullptr,
                       m, n, k, lda, ldc, splits, eps});
}

/// kern_gemv_rmsnorm_silu_mul_bf16: the SiLU*mul epilogue over the RMSNorm prologue.
extern "C" __global__ void __launch_bounds__(128) kern_gemv_rmsnorm_silu_mul_bf16(
    const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ norm_weight, const __nv_bfloat16* __restrict__ w,
    __nv_bfloat16* c, float* partial, int* counters, int m, int n, int k, int lda, int ldc, int splits, float eps) {
  gemv<true, Epi::kSiluMul>(Args{a, norm_weight, w, nullptr, c, partial, counters, nullptr, nullptr,
                       m, n, k, lda, ldc, splits, eps});
}

/// kern_gemv_rmsnorm_argmax_bf16: lm_head after the final norm with fused
/// argmax partials. Params: a, norm_weight, w, out c (logits, bf16),
/// partial, counters, out f32 argmax_val [m, ceil(n / 8)], out i32
/// argmax_idx [m, ceil(n / 8)], i32 m, n, k, lda, ldc, splits, f32 eps.
/// kern_argmax_reduce with num_chunks = ceil(n / 8) finishes the argmax.
extern "C" __global__ void __launch_bounds__(128) kern_gemv_rmsnorm_argmax_bf16(
    const __nv_bfloat16* a, const __nv_bfloat16* __restrict__ norm_weight, const __nv_bfloat16* __restrict__ w,
    __nv_bfloat16* c, float* partial, int* counters, float* argmax_val, int* argmax_idx, int m, int n, int k, int lda,
    int ldc, int splits, float eps) {
  gemv<true, Epi::kArgmax>(Args{a, norm_weight, w, nullptr, c, partial, counters, argmax_val, argmax_idx, m, n, k, lda,
                                ldc, splits, eps});
}
