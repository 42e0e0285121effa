// GemmTiles (gemm_tiles.h): the cpu GEMM's dots in one order, portable,
// AVX2 (FMA) and AVX-512 BF16 (vdpbf16ps) paths with the same bits.
//
// Blocking: the a rows are taken in blocks of kRowBlock (their layout, at
// most 64 x k x 4 bytes, stays in L2) and, within a block, w in panels of a
// few rows (read from memory once per block, then from L1 for every tile of
// a rows); a register tile keeps MR a rows x NR w rows of lane accumulators
// for the whole k, so c is written once.
#include "kernels-src/cpu/gemm_tiles.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports once inlined into a target("avx512f") body.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"  // _mm512_extractf64x4_pd, likewise
#include <immintrin.h>
#define KERN_GEMM_X86 1
#else
#define KERN_GEMM_X86 0
#endif

#include "common/bf16.h"

namespace kern::cpu {

namespace {

constexpr int64_t kChunk = 32;     // elements per chunk (16 lanes x a pair)
constexpr int64_t kRowBlock = 64;  // a rows whose layout is reused across w panels

/// The halving horizontal sum of 16 lane sums: (L, L + 8), (L, L + 4), (L, L + 2), (0, 1).
inline float lane_sum(const float* v) {
  float s8[8], s4[4];
  for (int l = 0; l < 8; ++l) s8[l] = v[l] + v[l + 8];
  for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
  const float s0 = s4[0] + s4[2], s1 = s4[1] + s4[3];
  return s0 + s1;
}

/// c[i, j] = bf16((c +) dot): the one rounding.
inline void store(const GemmProblem& g, int64_t i, int64_t j, float dot) {
  uint16_t& c = g.c[i * g.n + j];
  c = f32_to_bf16(g.accumulate ? bf16_to_f32(c) + dot : dot);
}

/// The portable path: the order above, one (i, j) at a time, lane by lane
/// (FMA hardware clone: std::fma inline; default: a libm call; both exactly
/// rounded). `pairs` is the f32 pair layout of the a rows.
__attribute__((target_clones("fma", "default"))) void columns_portable(const GemmProblem& g, const float* pairs,
                                                                       int64_t chunks, int64_t m_begin, int64_t m_end,
                                                                       int64_t n_begin, int64_t n_end) {
  for (int64_t i = m_begin; i < m_end; ++i) {
    const float* ap = pairs + i * chunks * kChunk;
    for (int64_t j = n_begin; j < n_end; ++j) {
      const uint16_t* w = g.w + j * g.k;
      float lanes[16] = {};
      for (int64_t q = 0; q < chunks; ++q) {
        for (int l = 0; l < 16; ++l) {
          const int64_t e = q * kChunk + 2 * l;
          const float* aq = ap + q * kChunk + (l / 8) * 16;
          const float w_hi = e + 1 < g.k ? bf16_to_f32(w[e + 1]) : 0.0f;
          const float w_lo = e < g.k ? bf16_to_f32(w[e]) : 0.0f;
          lanes[l] = std::fma(aq[l % 8], w_hi, lanes[l]);
          lanes[l] = std::fma(aq[8 + l % 8], w_lo, lanes[l]);
        }
      }
      store(g, i, j, lane_sum(lanes));
    }
  }
}

#if KERN_GEMM_X86

#define KERN_GEMM_AVX2 __attribute__((target("avx2,fma")))
#define KERN_GEMM_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16,avx2,fma")))

/// lane_sum of lanes 0..7 in lo and 8..15 in hi.
[[gnu::always_inline]] inline KERN_GEMM_AVX2 float lane_sum_avx2(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

/// The AVX2 tile: MR a rows (pair layout at ap, row stride apr floats) x NR
/// w rows (w, row stride k; the last chunk from `tail[r]` when k % 32 != 0)
/// into dots[i][r]. Lanes 0..7 and 8..15 of a chunk are two ymm halves.
template <int MR, int NR>
KERN_GEMM_AVX2 void tile_avx2(const float* ap, int64_t apr, const uint16_t* w, int64_t k, int64_t full,
                              const uint16_t (*tail)[kChunk], float (*dots)[4]) {
  __m256 acc[MR][NR][2];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r][0] = acc[i][r][1] = _mm256_setzero_ps();
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const int64_t chunks = full + (tail ? 1 : 0);
  for (int64_t q = 0; q < chunks; ++q) {
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < NR; ++r) {
        const uint16_t* wq = q < full ? w + r * k + q * kChunk : tail[r];
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq + 16 * h));
        const __m256 w_hi = _mm256_castsi256_ps(_mm256_and_si256(v, hi_mask));
        const __m256 w_lo = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        for (int i = 0; i < MR; ++i) {
          const float* a = ap + i * apr + q * kChunk + 16 * h;
          acc[i][r][h] = _mm256_fmadd_ps(_mm256_loadu_ps(a), w_hi, acc[i][r][h]);
          acc[i][r][h] = _mm256_fmadd_ps(_mm256_loadu_ps(a + 8), w_lo, acc[i][r][h]);
        }
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) dots[i][r] = lane_sum_avx2(acc[i][r][0], acc[i][r][1]);
}

template <int MR>
KERN_GEMM_AVX2 void tile_avx2_nr(int nr, const float* ap, int64_t apr, const uint16_t* w, int64_t k, int64_t full,
                                 const uint16_t (*tail)[kChunk], float (*dots)[4]) {
  switch (nr) {
    case 3: tile_avx2<MR, 3>(ap, apr, w, k, full, tail, dots); break;
    case 2: tile_avx2<MR, 2>(ap, apr, w, k, full, tail, dots); break;
    default: tile_avx2<MR, 1>(ap, apr, w, k, full, tail, dots); break;
  }
}

/// Rows [m_begin, m_end) x columns [n_begin, n_end) by the AVX2 path.
KERN_GEMM_AVX2 void columns_avx2(const GemmProblem& g, const float* pairs, int64_t chunks, int64_t m_begin,
                                 int64_t m_end, int64_t n_begin, int64_t n_end) {
  constexpr int kNr = 3, kMr = 2;
  const int64_t full = g.k / kChunk, apr = chunks * kChunk;
  alignas(32) uint16_t tail[kNr][kChunk];
  float dots[kMr][4];
  for (int64_t j = n_begin; j < n_end; j += kNr) {
    const int nr = static_cast<int>(std::min<int64_t>(kNr, n_end - j));
    const uint16_t* w = g.w + j * g.k;
    const bool has_tail = full < chunks;
    if (has_tail) {
      for (int r = 0; r < nr; ++r) {
        std::memset(tail[r], 0, sizeof tail[r]);
        std::memcpy(tail[r], w + r * g.k + full * kChunk, static_cast<size_t>(g.k - full * kChunk) * 2);
      }
    }
    int64_t i = m_begin;
    for (; i + kMr <= m_end; i += kMr) {
      tile_avx2_nr<kMr>(nr, pairs + i * apr, apr, w, g.k, full, has_tail ? tail : nullptr, dots);
      for (int q = 0; q < kMr; ++q)
        for (int r = 0; r < nr; ++r) store(g, i + q, j + r, dots[q][r]);
    }
    for (; i < m_end; ++i) {
      tile_avx2_nr<1>(nr, pairs + i * apr, apr, w, g.k, full, has_tail ? tail : nullptr, dots);
      for (int r = 0; r < nr; ++r) store(g, i, j + r, dots[0][r]);
    }
  }
}

/// lane_sum of each of 16 zmms at once (v[x]'s into out[4 * (x % 4) + x / 4]):
/// the same additions of the same operands as lane_sum, step by step on
/// whole registers ((L, L + 8) of two vectors per add, then (L, L + 4) of
/// four, (L, L + 2) of eight, (0, 1) of all sixteen), 45 instructions instead
/// of 16 separate reductions of ~8.
[[gnu::always_inline]] inline KERN_GEMM_BF16 void lane_sums16(const __m512* v, float* out) {
  __m512 s8[8], s4[4], s2[2];
  for (int p = 0; p < 8; ++p) {  // halves [v[2p] 0..7 | v[2p + 1] 0..7] + [.. 8..15 | .. 8..15]
    const __m512 lo = _mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 hi = _mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2));
    s8[p] = _mm512_add_ps(lo, hi);
  }
  for (int p = 0; p < 4; ++p) {  // quarter j: v[4p + j]'s s4[0..3]
    const __m512 x = _mm512_shuffle_f32x4(s8[2 * p], s8[2 * p + 1], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 y = _mm512_shuffle_f32x4(s8[2 * p], s8[2 * p + 1], _MM_SHUFFLE(3, 1, 3, 1));
    s4[p] = _mm512_add_ps(x, y);
  }
  for (int p = 0; p < 2; ++p) {  // quarter j: v[8p + j]'s s0, s1, then v[8p + 4 + j]'s
    const __m512 x = _mm512_shuffle_ps(s4[2 * p], s4[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 y = _mm512_shuffle_ps(s4[2 * p], s4[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2));
    s2[p] = _mm512_add_ps(x, y);
  }
  // quarter j: the sums of v[j], v[4 + j], v[8 + j], v[12 + j]
  const __m512 x = _mm512_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(2, 0, 2, 0));
  const __m512 y = _mm512_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(3, 1, 3, 1));
  _mm512_store_ps(out, _mm512_add_ps(x, y));
}

/// mn1 = min(mn1, |x| - 1), mx = max(mx, |x|) over the bf16 words of z
/// (|x| = bits & 0x7fff; a zero wraps to 0xffff and leaves mn1 alone).
[[gnu::always_inline]] inline KERN_GEMM_BF16 void magnitudes(__m512i z, __m512i& mn1, __m512i& mx) {
  const __m512i t = _mm512_and_si512(z, _mm512_set1_epi16(0x7fff));
  mx = _mm512_max_epu16(mx, t);
  mn1 = _mm512_min_epu16(mn1, _mm512_sub_epi16(t, _mm512_set1_epi16(1)));
}

/// The vdpbf16ps tile: MR a rows (bf16, row stride lda, zero-padded to whole
/// chunks) x NR w rows (row stride k; the last partial chunk read with a
/// zeroing mask) into dots[i][r]; with kCheck, the magnitudes of the w read
/// into mn1 / mx.
template <int MR, int NR, bool kCheck>
KERN_GEMM_BF16 void tile_bf16(const uint16_t* a, int64_t lda, const uint16_t* w, int64_t k, int64_t chunks,
                              float (*dots)[4], __m512i& mn1, __m512i& mx) {
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();
  const int64_t full = k / kChunk;
  for (int64_t q = 0; q < full; ++q) {
    __m512i wv[NR];
    for (int r = 0; r < NR; ++r) {
      wv[r] = _mm512_loadu_si512(w + r * k + q * kChunk);
      if constexpr (kCheck) {
        magnitudes(wv[r], mn1, mx);
        // The panel's first tile reads w from memory: fetch the next
        // panel's line (a prefetch past the end of w is dropped, never
        // faults; into L2 only measured slower in a 4 x 4 tile loop).
        _mm_prefetch(reinterpret_cast<const char*>(w + (NR + r) * k + q * kChunk), _MM_HINT_T0);
      }
    }
    for (int i = 0; i < MR; ++i) {
      const auto av = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a + i * lda + q * kChunk));
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], av, reinterpret_cast<__m512bh>(wv[r]));
    }
  }
  if (full < chunks) {
    const __mmask32 mask = static_cast<__mmask32>((uint64_t{1} << (k - full * kChunk)) - 1);
    __m512i wv[NR];
    for (int r = 0; r < NR; ++r) {
      wv[r] = _mm512_maskz_loadu_epi16(mask, w + r * k + full * kChunk);
      if constexpr (kCheck) magnitudes(wv[r], mn1, mx);
    }
    for (int i = 0; i < MR; ++i) {
      const auto av = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a + i * lda + full * kChunk));
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], av, reinterpret_cast<__m512bh>(wv[r]));
    }
  }
  __m512 v[16];
  for (int x = 0; x < 16; ++x) v[x] = x / 4 < MR && x % 4 < NR ? acc[x / 4][x % 4] : _mm512_setzero_ps();
  alignas(64) float sums[16];
  lane_sums16(v, sums);
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) dots[i][r] = sums[4 * r + i];
}

using Bf16Tile = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, int64_t, float (*)[4], __m512i&,
                          __m512i&);
constexpr int kBf16Mr = 4, kBf16Nr = 4;

template <bool kCheck, int MR>
Bf16Tile bf16_tile_mr(int nr) {
  switch (nr) {
    case 4: return &tile_bf16<MR, 4, kCheck>;
    case 3: return &tile_bf16<MR, 3, kCheck>;
    case 2: return &tile_bf16<MR, 2, kCheck>;
    default: return &tile_bf16<MR, 1, kCheck>;
  }
}

/// tile_bf16<mr, nr, kCheck> for 1 <= mr, nr <= 4.
template <bool kCheck>
Bf16Tile bf16_tile(int mr, int nr) {
  switch (mr) {
    case 4: return bf16_tile_mr<kCheck, 4>(nr);
    case 3: return bf16_tile_mr<kCheck, 3>(nr);
    case 2: return bf16_tile_mr<kCheck, 2>(nr);
    default: return bf16_tile_mr<kCheck, 1>(nr);
  }
}

KERN_GEMM_BF16 uint16_t hmin_epu16(__m512i v) {
  alignas(64) uint16_t x[32];
  _mm512_store_si512(x, v);
  return *std::min_element(x, x + 32);
}

KERN_GEMM_BF16 uint16_t hmax_epu16(__m512i v) {
  alignas(64) uint16_t x[32];
  _mm512_store_si512(x, v);
  return *std::max_element(x, x + 32);
}

/// Over n values: min(|x| - 1) and max(|x|) of the nonzero bf16 magnitudes
/// (32 at a time: it runs on one thread before the columns are split).
KERN_GEMM_BF16 void range_bf16(const uint16_t* x, int64_t n, uint16_t& min1, uint16_t& max) {
  __m512i mn1 = _mm512_set1_epi16(-1), mx = _mm512_setzero_si512();
  int64_t e = 0;
  for (; e + 32 <= n; e += 32) magnitudes(_mm512_loadu_si512(x + e), mn1, mx);
  if (e < n) {
    const __mmask32 mask = static_cast<__mmask32>((uint64_t{1} << (n - e)) - 1);
    magnitudes(_mm512_maskz_loadu_epi16(mask, x + e), mn1, mx);  // zeros: no effect
  }
  min1 = std::min(min1, hmin_epu16(mn1));
  max = std::max(max, hmax_epu16(mx));
}

/// Rows [m0, m1) x columns [n_begin, n_end) by the vdpbf16ps path (a_bf16:
/// the rows padded to whole chunks, row stride lda; a_min1 / a_max their
/// magnitudes): each panel's first tile also reads the panel's w
/// magnitudes, and its dots are stored only once vdpbf16ps is known to give
/// the fmas' bits there; a panel where it might not runs the AVX2 path.
KERN_GEMM_BF16 void block_bf16(const GemmProblem& g, const uint16_t* a_bf16, int64_t lda, int64_t chunks,
                               const std::function<const float*()>& pairs, uint16_t a_min1, uint16_t a_max, int64_t m0, int64_t m1,
                               int64_t n_begin, int64_t n_end) {
  float dots[kBf16Mr][4];
  for (int64_t j = n_begin; j < n_end; j += kBf16Nr) {
    const int nr = static_cast<int>(std::min<int64_t>(kBf16Nr, n_end - j));
    const uint16_t* w = g.w + j * g.k;
    __m512i mn1 = _mm512_set1_epi16(-1), mx = _mm512_setzero_si512();
    const int mr0 = static_cast<int>(std::min<int64_t>(kBf16Mr, m1 - m0));
    bf16_tile<true>(mr0, nr)(a_bf16 + m0 * lda, lda, w, g.k, chunks, dots, mn1, mx);
    if (!vdpbf16ps_exact(a_min1, a_max, hmin_epu16(mn1), hmax_epu16(mx))) {
      columns_avx2(g, pairs(), chunks, m0, m1, j, j + nr);
      continue;
    }
    for (int q = 0; q < mr0; ++q)
      for (int r = 0; r < nr; ++r) store(g, m0 + q, j + r, dots[q][r]);
    for (int64_t i = m0 + mr0; i < m1; i += kBf16Mr) {
      const int mr = static_cast<int>(std::min<int64_t>(kBf16Mr, m1 - i));
      bf16_tile<false>(mr, nr)(a_bf16 + i * lda, lda, w, g.k, chunks, dots, mn1, mx);
      for (int q = 0; q < mr; ++q)
        for (int r = 0; r < nr; ++r) store(g, i + q, j + r, dots[q][r]);
    }
  }
}

#endif  // KERN_GEMM_X86

/// The f32 pair layout of a rows: per chunk, lanes 0..7's elements 2L + 1
/// then their elements 2L, then the same for lanes 8..15 (zeros past k).
void lay_out_pairs(const uint16_t* a, int64_t m, int64_t k, int64_t chunks, float* out) {
  for (int64_t i = 0; i < m; ++i) {
    const uint16_t* row = a + i * k;
    for (int64_t q = 0; q < chunks; ++q) {
      float* o = out + (i * chunks + q) * kChunk;
      for (int l = 0; l < 16; ++l) {
        const int64_t e = q * kChunk + 2 * l;
        o[(l / 8) * 16 + l % 8] = e + 1 < k ? bf16_to_f32(row[e + 1]) : 0.0f;
        o[(l / 8) * 16 + 8 + l % 8] = e < k ? bf16_to_f32(row[e]) : 0.0f;
      }
    }
  }
}

}  // namespace

GemmTiles::GemmTiles(const GemmProblem& g, GemvIsa isa) : g_(g), isa_(isa) {
  if (!gemv_isa_supported(isa_)) isa_ = GemvIsa::kPortable;
  if (isa_ == GemvIsa::kAvx512) isa_ = GemvIsa::kAvx2;
  chunks_ = (g.k + kChunk - 1) / kChunk;
  if (g.m <= 0 || g.k <= 0) return;
#if KERN_GEMM_X86
  if (isa_ == GemvIsa::kAvx512Bf16) {
    if (g.k % kChunk == 0) {
      a_bf16_ = g.a;
      lda_ = g.k;
    } else {
      lda_ = chunks_ * kChunk;
      a16_ = std::make_unique<uint16_t[]>(static_cast<size_t>(g.m * lda_));
      for (int64_t i = 0; i < g.m; ++i) {
        std::memcpy(a16_.get() + i * lda_, g.a + i * g.k, static_cast<size_t>(g.k) * 2);
        std::memset(a16_.get() + i * lda_ + g.k, 0, static_cast<size_t>(lda_ - g.k) * 2);
      }
      a_bf16_ = a16_.get();
    }
    range_bf16(g.a, g.m * g.k, a_min1_, a_max_);
    return;  // the FMA layout only if a panel falls back (pairs())
  }
#endif
  pairs();
}

const float* GemmTiles::pairs() const {
  std::call_once(pairs_once_, [this] {
    pairs_ = std::make_unique<float[]>(static_cast<size_t>(g_.m * chunks_ * kChunk));
    lay_out_pairs(g_.a, g_.m, g_.k, chunks_, pairs_.get());
  });
  return pairs_.get();
}

void GemmTiles::columns_fma(int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end) const {
#if KERN_GEMM_X86
  if (isa_ != GemvIsa::kPortable) {
    columns_avx2(g_, pairs(), chunks_, m_begin, m_end, n_begin, n_end);
    return;
  }
#endif
  columns_portable(g_, pairs(), chunks_, m_begin, m_end, n_begin, n_end);
}

void GemmTiles::columns(int64_t n_begin, int64_t n_end) const {
  if (g_.m <= 0 || n_begin >= n_end) return;
  if (g_.k <= 0) {
    for (int64_t i = 0; i < g_.m; ++i)
      for (int64_t j = n_begin; j < n_end; ++j) store(g_, i, j, 0.0f);
    return;
  }
  for (int64_t m0 = 0; m0 < g_.m; m0 += kRowBlock) {
    const int64_t m1 = std::min(g_.m, m0 + kRowBlock);
#if KERN_GEMM_X86
    if (isa_ == GemvIsa::kAvx512Bf16) {
      block_bf16(g_, a_bf16_, lda_, chunks_, [this] { return pairs(); }, a_min1_, a_max_, m0, m1, n_begin, n_end);
      continue;
    }
#endif
    columns_fma(m0, m1, n_begin, n_end);
  }
}

}  // namespace kern::cpu
