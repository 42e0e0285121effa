// GemvLaneDots (gemv_lanes.h): the lane-order dots of the decode GEMV twins,
// portable, AVX2 and AVX-512 paths with the same bits.
#include "kernels-src/cpu/gemv_lanes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports once inlined into a target("avx512f") body.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define KERN_GEMV_X86 1
#else
#define KERN_GEMV_X86 0
#endif

#include "common/bf16.h"
#include "kernels-src/cpu/parallel.h"

namespace kern::cpu {

namespace {

constexpr int kLanes = 32;            // one warp
constexpr int64_t kBlockElems = 256;  // one 8-element group per lane
constexpr int kMaxM = 8;

/// v[0] after the xor butterfly (16, 8, 4, 2, 1) over 32 lane sums: level
/// o adds v[x + o] to v[x] for x < o (the lanes lane 0's sum depends on).
[[gnu::always_inline]] inline float butterfly0(float* v) {
  for (int o = kLanes / 2; o > 0; o >>= 1)
    for (int x = 0; x < o; ++x) v[x] = v[x] + v[x + o];
  return v[0];
}

/// Continues the 32 lane sums with groups [g0, ge) of the split starting at
/// gb (group g to lane (g - gb) % 32, elements below k, one fma each).
[[gnu::always_inline]] inline void scalar_groups(const float* a, const uint16_t* w, int64_t k, int64_t gb, int64_t g0,
                                                 int64_t ge, float* lanes) {
  for (int64_t g = g0; g < ge; ++g) {
    float& acc = lanes[(g - gb) % kLanes];
    const int64_t end = std::min(k, 8 * g + 8);
    for (int64_t x = 8 * g; x < end; ++x) acc = std::fma(a[x], bf16_to_f32(w[x]), acc);
  }
}

/// The portable path: one a row at a time, lane by lane (FMA hardware clone:
/// std::fma inline; default: a libm call; both exactly rounded).
__attribute__((target_clones("fma", "default"))) void dots_portable(const float* a, int64_t m, int64_t k,
                                                                    const uint16_t* w, int64_t gb, int64_t ge,
                                                                    float* out) {
  for (int64_t i = 0; i < m; ++i) {
    float lanes[kLanes] = {};
    scalar_groups(a + i * k, w, k, gb, gb, ge, lanes);
    out[i] = butterfly0(lanes);
  }
}

/// The portable path on a packed w (gemv_packed.h): wr is the packed row at
/// the split's first group gb; lane l's dword d of block t holds elements 2d
/// (high word) and 2d + 1 (low word) of group gb + 32 t + l. Same order as
/// dots_portable.
__attribute__((target_clones("fma", "default"))) void dots_packed_portable(const float* a, int64_t m, int64_t k,
                                                                           const uint16_t* wr, int64_t gb, int64_t ge,
                                                                           float* out) {
  (void)k;
  const int64_t full = (ge - gb) / kLanes, part = (ge - gb) % kLanes;
  for (int64_t i = 0; i < m; ++i) {
    float lanes[kLanes] = {};
    const float* ai = a + i * k;
    for (int64_t t = 0; t <= full; ++t) {
      const int64_t live = t < full ? kLanes : part;
      const uint16_t* blk = wr + kBlockElems * t;
      for (int64_t l = 0; l < live; ++l) {
        const float* ag = ai + 8 * (gb + kLanes * t + l);
        float& acc = lanes[l];
        for (int d = 0; d < 4; ++d) {
          const uint16_t* dw = blk + 2 * (d * live + l);
          acc = std::fma(ag[2 * d], bf16_to_f32(dw[1]), acc);
          acc = std::fma(ag[2 * d + 1], bf16_to_f32(dw[0]), acc);
        }
      }
    }
    out[i] = butterfly0(lanes);
  }
}

#if KERN_GEMV_X86

/// v[d] = dword d (elements 2d, 2d + 1) of the 16 groups of a half w block
/// held in `z` (4 zmm, 4 groups each): a dword transpose (permutex2var, then
/// 256-bit halves).
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void transpose_half_avx512(
    const __m512i (&z)[4], __m512i (&v)[4]) {
  const __m512i idx_a = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
  const __m512i idx_b = _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
  // Dword d of group p: z[p / 4][4 (p % 4) + d]; t..a: d = 0, 1 of 8 groups, t..b: d = 2, 3.
  const __m512i t01a = _mm512_permutex2var_epi32(z[0], idx_a, z[1]), t01b = _mm512_permutex2var_epi32(z[0], idx_b, z[1]);
  const __m512i t23a = _mm512_permutex2var_epi32(z[2], idx_a, z[3]), t23b = _mm512_permutex2var_epi32(z[2], idx_b, z[3]);
  v[0] = _mm512_shuffle_i64x2(t01a, t23a, 0x44);
  v[1] = _mm512_shuffle_i64x2(t01a, t23a, 0xee);
  v[2] = _mm512_shuffle_i64x2(t01b, t23b, 0x44);
  v[3] = _mm512_shuffle_i64x2(t01b, t23b, 0xee);
}

/// acc[i] += one 16-lane half of a w block for every a row: `z` holds the
/// half's 16 groups in 4 zmm (4 groups each), `at` the a rows' lane-major
/// block (row stride `row_stride`) at this half; `lanes` masks the lanes that
/// have a group (others keep their sum exactly). Of each transposed dword
/// (transpose_half_avx512) the low word widens by a shift, the high one by a
/// mask.
template <int M>
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void half_block_avx512(
    __m512 (&acc)[M], const __m512i (&z)[4], const float* at, int64_t row_stride, __mmask16 lanes) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  __m512i v[4];
  transpose_half_avx512(z, v);
  for (int d = 0; d < 4; ++d) {
    const __m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(v[d], 16));  // element 2d (low word)
    const __m512 wo = _mm512_castsi512_ps(_mm512_and_si512(v[d], high));  // element 2d + 1
    for (int i = 0; i < M; ++i) {
      const float* ai = at + i * row_stride + 2 * d * kLanes;
      if (lanes == 0xffff) {
        acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(ai), we, acc[i]);
        acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(ai + kLanes), wo, acc[i]);
      } else {
        acc[i] = _mm512_mask3_fmadd_ps(_mm512_loadu_ps(ai), we, acc[i], lanes);
        acc[i] = _mm512_mask3_fmadd_ps(_mm512_loadu_ps(ai + kLanes), wo, acc[i], lanes);
      }
    }
  }
}

/// half_block_avx512 for two w rows at once (their halves in z0 and z1, the
/// sums in acc0 and acc1): each a load feeds one fma per w row, half the a
/// loads per fma, which is what bounds the loop at m = 8 (an empty asm pins
/// the loaded a in a register: GCC otherwise folded it into both fmas'
/// memory operands, two loads again). A is float (the lane-major blocks, at
/// this half) or uint32_t (the same blocks as bf16 pairs: dword d of lane l
/// holds elements 2d and 2d + 1 in its high and low word, widened by a mask
/// and a shift: one 64-byte load for both, half the bytes;
/// GemvLaneDots::pairs_); row_stride counts A elements.
template <int M, typename A>
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void pair_half_block_avx512(
    __m512 (&acc0)[M], __m512 (&acc1)[M], const __m512i (&z0)[4], const __m512i (&z1)[4], const A* at,
    int64_t row_stride, __mmask16 lanes) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  __m512i v0[4], v1[4];
  transpose_half_avx512(z0, v0);
  transpose_half_avx512(z1, v1);
  for (int d = 0; d < 4; ++d) {
    const __m512 we0 = _mm512_castsi512_ps(_mm512_slli_epi32(v0[d], 16));
    const __m512 wo0 = _mm512_castsi512_ps(_mm512_and_si512(v0[d], high));
    const __m512 we1 = _mm512_castsi512_ps(_mm512_slli_epi32(v1[d], 16));
    const __m512 wo1 = _mm512_castsi512_ps(_mm512_and_si512(v1[d], high));
    for (int i = 0; i < M; ++i) {
      __m512 ae, ao;
      if constexpr (std::is_same_v<A, float>) {
        const float* ai = at + i * row_stride + 2 * d * kLanes;
        ae = _mm512_loadu_ps(ai);
        asm("" : "+v"(ae));
        ao = _mm512_loadu_ps(ai + kLanes);
        asm("" : "+v"(ao));
      } else {
        const __m512i pv = _mm512_loadu_si512(at + i * row_stride + d * kLanes);
        ae = _mm512_castsi512_ps(_mm512_and_si512(pv, high));  // element 2d (high word)
        ao = _mm512_castsi512_ps(_mm512_slli_epi32(pv, 16));  // element 2d + 1 (low word)
      }
      if (lanes == 0xffff) {
        acc0[i] = _mm512_fmadd_ps(ae, we0, acc0[i]);
        acc1[i] = _mm512_fmadd_ps(ae, we1, acc1[i]);
        acc0[i] = _mm512_fmadd_ps(ao, wo0, acc0[i]);
        acc1[i] = _mm512_fmadd_ps(ao, wo1, acc1[i]);
      } else {
        acc0[i] = _mm512_mask3_fmadd_ps(ae, we0, acc0[i], lanes);
        acc1[i] = _mm512_mask3_fmadd_ps(ae, we1, acc1[i], lanes);
        acc0[i] = _mm512_mask3_fmadd_ps(ao, wo0, acc0[i], lanes);
        acc1[i] = _mm512_mask3_fmadd_ps(ao, wo1, acc1[i], lanes);
      }
    }
  }
}

/// The 4 zmm of half h (groups 16h .. 16h + 15) of the w block at group g:
/// `cnt` (<= 16) groups, the rest zero.
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void load_half_avx512(
    const uint16_t* w, int64_t g, int h, int cnt, __m512i (&z)[4]) {
  const uint16_t* wh = w + 8 * g + 128 * h;
  if (cnt == 16) {
    for (int q = 0; q < 4; ++q) z[q] = _mm512_loadu_si512(wh + 32 * q);
    return;
  }
  for (int q = 0; q < 4; ++q) {
    const int groups = std::clamp(cnt - 4 * q, 0, 4);
    z[q] = _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << (4 * groups)) - 1u), wh + 32 * q);
  }
}

/// out = the butterfly of one a row's 32 lane sums, after the split's
/// partial last group [done, ge) if there is one (lane by lane).
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void finish_avx512(
    const float* a, int64_t k, const uint16_t* w, int64_t gb, int64_t done, int64_t ge, float* lanes, float* out) {
  if (done < ge) {
    scalar_groups(a, w, k, gb, done, ge, lanes);
    *out = butterfly0(lanes);
    return;
  }
  // The butterfly as halving sums: +16, +8, +4, +2, +1.
  const __m512 s16 = _mm512_add_ps(_mm512_load_ps(lanes), _mm512_load_ps(lanes + 16));
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(s16),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s16), 1)));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  *out = _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

/// out_row[i] = the butterfly of a row i's 32 lane sums held as lanes 0..15
/// (lo[i]) and 16..31 (hi[i]), for i < M: the end of a packed w row (a
/// packed row has no partial group, so there is none to add here).
template <int M>
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void finish_rows_avx512(
    const __m512 (&lo)[M], const __m512 (&hi)[M], float* out_row) {
  for (int i = 0; i < M; ++i) {
    alignas(64) float lanes[kLanes];
    _mm512_store_ps(lanes, lo[i]);
    _mm512_store_ps(lanes + 16, hi[i]);
    finish_avx512(nullptr, 0, nullptr, 0, 0, 0, lanes, out_row + i);
  }
}

/// How many w rows ahead of the one in use the AVX-512 path prefetches, into
/// L2 (_MM_HINT_T1). Without it the m = 8 loop stalled on its w loads (perf:
/// most samples on the instruction after a w load) once the fmas per w byte
/// grew; into L1 (_MM_HINT_T0) it helped on a 48 KB L1 (Zen 5: a 256 MB
/// streamed [131072, 1024] GEMV at m = 8 from 29 to 23.5 ms on two threads)
/// but on a 32 KB one (Zen 4) the prefetched rows pushed the a blocks (16 KB
/// at m = 8) out of L1, and m = 1 and m = 8 both ran slower than into L2,
/// which measured the same as L1 on Zen 5 (bench/results/kern-run-batch-cpu.md).
/// Farther (8, 16 rows) or nearer (2) measured the same.
constexpr int64_t kPrefetchRows = 4;

/// The AVX512_BF16 pairs loop (M = 2..8 a rows, packed_pairs_avx512_bf16)
/// prefetches the next pair's rows (2 ahead) into L1 and the rows
/// kPairL2Rows ahead into L2. Its eight vdpbf16ps per 64 bytes of w are slow
/// enough that a prefetch into L2 4 rows ahead (the other loops' rule)
/// left it stalled on the first w load of each block and on the prefetches
/// themselves (perf annotate of a batch-8 decode, session 7); no prefetch
/// at all ran 8-13 % slower still. Batch-8 decode at the 0.6B geometry,
/// alternating builds (load 1.3-1.9): main 129-148 tok/s, L1 at 4 rows
/// 138-160, L1 at 2 rows 141-146, and with L2 at 6 or 10 rows 150-180
/// (docs/kernels.md "Session 7 (lead)").
constexpr int64_t kPairL1Rows = 2, kPairL2Rows = 10;

/// Prefetches into L2 (Hint = _MM_HINT_T0: into L1) part t of a w row's
/// split starting at `from` (null: none): its 64-byte lines [t lines, (t + 1) lines). A split's pass calls
/// this for each of its full blocks t with lines = ceil(the split's lines /
/// full), so the split's last `part` groups are prefetched too (8 lines per
/// block, the block's own, left them out: 22 of the 86 groups of o_proj's
/// split at k = 2048, 3 splits). One split of whole blocks (k = 1024, or
/// down_proj's 3 x 1024) prefetches 8 lines per block, as before.
template <int Hint = _MM_HINT_T1>
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void prefetch_part(const uint16_t* from,
                                                                                         int64_t t, int64_t lines) {
  if (from == nullptr) return;
  const char* p = reinterpret_cast<const char*>(from) + 64 * t * lines;
  for (int64_t line = 0; line < lines; ++line) _mm_prefetch(p + 64 * line, static_cast<_mm_hint>(Hint));
}

/// Both 16-lane halves of one w row's split for M (<= 4) a rows (their
/// lane-major blocks at `la`, row stride `row_stride`) into lanes[i]: the
/// `full` complete blocks from group gb, then the last `part` (< 32) whole
/// groups with masked loads and fmas; each lane's fmas in group order. The 2M
/// accumulators are named lo and hi (a rolled loop over the halves had GCC
/// index them on the stack). Part t of the w row `prefetch` (null: none;
/// prefetch_part, `pf_lines` lines) is prefetched with block t.
template <int M>
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void row_avx512(
    const uint16_t* wr, int64_t gb, int64_t full, int64_t part, const float* la, int64_t row_stride,
    const uint16_t* prefetch, int64_t pf_lines, float (*lanes)[kLanes]) {
  __m512 lo[M], hi[M];
  for (int i = 0; i < M; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
  for (int64_t t = 0; t < full; ++t) {
    prefetch_part(prefetch, t, pf_lines);
    __m512i z[4];
    load_half_avx512(wr, gb + kLanes * t, 0, 16, z);
    half_block_avx512<M>(lo, z, la + t * kBlockElems, row_stride, 0xffff);
    load_half_avx512(wr, gb + kLanes * t, 1, 16, z);
    half_block_avx512<M>(hi, z, la + t * kBlockElems + 16, row_stride, 0xffff);
  }
  for (int h = 0; h < 2; ++h) {
    const int cnt = static_cast<int>(std::clamp<int64_t>(part - 16 * h, 0, 16));  // lanes with a group
    if (cnt == 0) continue;
    __m512i z[4];
    load_half_avx512(wr, gb + kLanes * full, h, cnt, z);
    half_block_avx512<M>(h == 0 ? lo : hi, z, la + full * kBlockElems + 16 * h, row_stride,
                         static_cast<__mmask16>((1u << cnt) - 1u));
  }
  for (int i = 0; i < M; ++i) {
    _mm512_store_ps(lanes[i], lo[i]);
    _mm512_store_ps(lanes[i] + 16, hi[i]);
  }
}

/// Half h (lanes 16h .. 16h + 15) of two w rows' split (w0, w1) for M (<= 4)
/// a rows (their blocks at `la`, A and row_stride as pair_half_block_avx512)
/// into l0[i] and l1[i] at lane 16h: the `full` complete blocks, then the
/// last `part` whole groups masked; part t of the rows p0 and p1 (null:
/// none; prefetch_part, `pf_lines` lines) prefetched with block t.
template <int M, typename A>
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void pair_half_avx512(
    const uint16_t* w0, const uint16_t* w1, int h, int64_t gb, int64_t full, int64_t part, const A* la,
    int64_t row_stride, const uint16_t* p0, const uint16_t* p1, int64_t pf_lines, float (*l0)[kLanes],
    float (*l1)[kLanes]) {
  constexpr int64_t kBlock = std::is_same_v<A, float> ? kBlockElems : kBlockElems / 2;  // A elements per block
  __m512 acc0[M], acc1[M];
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (int64_t t = 0; t < full; ++t) {
    prefetch_part(p0, t, pf_lines);
    prefetch_part(p1, t, pf_lines);
    __m512i z0[4], z1[4];
    load_half_avx512(w0, gb + kLanes * t, h, 16, z0);
    load_half_avx512(w1, gb + kLanes * t, h, 16, z1);
    pair_half_block_avx512<M>(acc0, acc1, z0, z1, la + t * kBlock + 16 * h, row_stride, 0xffff);
  }
  const int cnt = static_cast<int>(std::clamp<int64_t>(part - 16 * h, 0, 16));  // lanes with a group
  if (cnt > 0) {
    __m512i z0[4], z1[4];
    load_half_avx512(w0, gb + kLanes * full, h, cnt, z0);
    load_half_avx512(w1, gb + kLanes * full, h, cnt, z1);
    pair_half_block_avx512<M>(acc0, acc1, z0, z1, la + full * kBlock + 16 * h, row_stride,
                              static_cast<__mmask16>((1u << cnt) - 1u));
  }
  for (int i = 0; i < M; ++i) {
    _mm512_store_ps(l0[i] + 16 * h, acc0[i]);
    _mm512_store_ps(l1[i] + 16 * h, acc1[i]);
  }
}

/// Half h of two w rows' split for all M (5..8) a rows: a rows 0..3, then
/// 4..M-1 (their blocks at `la`, A and row_stride as pair_half_block_avx512),
/// the rows p0 and p1 prefetched during the first group.
template <int M, typename A>
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void pair_groups_avx512(
    const uint16_t* w0, const uint16_t* w1, int h, int64_t gb, int64_t full, int64_t part, const A* la,
    int64_t row_stride, const uint16_t* p0, const uint16_t* p1, int64_t pf_lines, float (*l0)[kLanes],
    float (*l1)[kLanes]) {
  pair_half_avx512<4>(w0, w1, h, gb, full, part, la, row_stride, p0, p1, pf_lines, l0, l1);
  pair_half_avx512<M - 4>(w0, w1, h, gb, full, part, la + 4 * row_stride, row_stride, nullptr, nullptr, 0, l0 + 4,
                          l1 + 4);
}

/// AVX-512: lanes 16h..16h+15 in one zmm (h = 0, 1), w rows r (row stride k)
/// into out[r * out_stride + i], the row kPrefetchRows ahead (at most the
/// last of the `readable` rows from w, >= rows) prefetched when pf_lines >
/// 0 (prefetch_part, the split's lines of the row).
///   * M <= 4: a w row at a time, both halves of each block together (2M
///     accumulators), w streamed in order.
///   * M > 4: two w rows at a time (an odd last row alone), the a rows in two
///     groups (0..3, 4..M-1), half 0 then half 1 of each group: 2 x 4
///     accumulators live, and each a load feeds both rows' fmas
///     (pair_half_block_avx512), from the a blocks as bf16 pairs (`lp`) when
///     GemvLaneDots has them. The passes after the first read the rows'
///     split (a few KB) from L1. (8 accumulators per half do not fit beside
///     the transposed w, and one w row per pass did twice the a loads: both
///     slower, bench/results/kern-run-batch-cpu.md.)
/// Each lane's fmas run in group order, so the bits do not depend on the loop
/// order.
template <int M>
__attribute__((target("avx512f,avx2,fma"))) void dots_avx512(const float* a, int64_t k, const uint16_t* w,
                                                              int64_t rows, int64_t gb, int64_t ge, int64_t full,
                                                              int64_t part, const float* la, const uint32_t* lp,
                                                              float* out, int64_t out_stride, int64_t readable,
                                                              int64_t pf_lines) {
  const int64_t row_stride = (full + (part > 0 ? 1 : 0)) * kBlockElems;
  const int64_t done = gb + kLanes * full + part;
  const auto ahead = [&](int64_t r) -> const uint16_t* {
    return pf_lines > 0 ? w + std::min(r + kPrefetchRows, readable - 1) * k + 8 * gb : nullptr;
  };
  constexpr int kFirst = M > 4 ? 4 : M;  // a rows in the first group
  int64_t r = 0;
  if constexpr (M > 4) {
    for (; r + 1 < rows; r += 2) {
      const uint16_t* w0 = w + r * k;
      const uint16_t* w1 = w0 + k;
      alignas(64) float l0[M][kLanes], l1[M][kLanes];
      for (int h = 0; h < 2; ++h) {
        const uint16_t* p0 = h == 0 ? ahead(r) : nullptr;
        const uint16_t* p1 = h == 0 ? ahead(r + 1) : nullptr;
        if (lp != nullptr)  // the a blocks as bf16 pairs: half the elements per row
          pair_groups_avx512<M>(w0, w1, h, gb, full, part, lp, row_stride / 2, p0, p1, pf_lines, l0, l1);
        else
          pair_groups_avx512<M>(w0, w1, h, gb, full, part, la, row_stride, p0, p1, pf_lines, l0, l1);
      }
      for (int i = 0; i < M; ++i) {
        finish_avx512(a + i * k, k, w0, gb, done, ge, l0[i], out + r * out_stride + i);
        finish_avx512(a + i * k, k, w1, gb, done, ge, l1[i], out + (r + 1) * out_stride + i);
      }
    }
  }
  for (; r < rows; ++r) {
    const uint16_t* wr = w + r * k;
    alignas(64) float lanes[M][kLanes];
    row_avx512<kFirst>(wr, gb, full, part, la, row_stride, ahead(r), pf_lines, lanes);
    if constexpr (M > 4)
      row_avx512<M - kFirst>(wr, gb, full, part, la + kFirst * row_stride, row_stride, nullptr, 0, lanes + kFirst);
    for (int i = 0; i < M; ++i) finish_avx512(a + i * k, k, wr, gb, done, ge, lanes[i], out + r * out_stride + i);
  }
}

// AVX512_BF16 (Zen 4, Sapphire Rapids). vdpbf16ps does, in each 32-bit lane
// j, acc += a.bf16[2j + 1] * w.bf16[2j + 1], then acc += a.bf16[2j] *
// w.bf16[2j]: two fp32 fmas with round-to-nearest-even, denormal inputs read
// as zero and denormal results flushed to zero (Intel SDM, VDPBF16PS; on Zen
// 4 the same bits as the two fmas, 32M random lanes tried). With element 2d
// in the high word of both operands (GemvLaneDots::pairs_ stores the a pairs
// that way; w's transposed dwords are rotated by 16), that is the lane's fma
// chain over elements 2d, 2d + 1: one instruction does two of the lane's
// fmas, with their bits whenever neither the DAZ nor the FTZ can act
// (dp_exact), at the fma's rate per instruction.

/// Whether vdpbf16ps gives the fma chain's bits for every product of an a
/// value and a w value whose magnitudes (bf16 bits & 0x7fff) lie in
/// [a_min1 + 1, a_max] and [w_min1 + 1, w_max] over the nonzero ones
/// (a_min1 / w_min1 = 0xffff: none is nonzero):
///   * no inf or NaN (their propagation is left out of the comparison);
///   * no denormal input (DAZ would read it as zero);
///   * every nonzero product at least 2^-103 in magnitude: the product is
///     then exact and a multiple of 2^-126, so every partial sum is too, so
///     it is zero or normal and FTZ never acts;
///   * every product below 2^126, so none overflows by itself.
bool dp_exact(uint16_t a_min1, uint16_t a_max, uint16_t w_min1, uint16_t w_max) {
  if (a_max >= 0x7f80 || w_max >= 0x7f80) return false;
  if (a_min1 == 0xffff || w_min1 == 0xffff) return true;  // every product is a zero
  // A magnitude with exponent field E lies in [2^(E - 127), 2^(E - 126)).
  const int ea_min = (a_min1 + 1) >> 7, ew_min = (w_min1 + 1) >> 7;
  if (ea_min == 0 || ew_min == 0) return false;
  return ea_min + ew_min >= 254 - 103 && (a_max >> 7) + (w_max >> 7) <= 252 + 126;
}

#define KERN_GEMV_BF16_TARGET "avx512f,avx512bw,avx512bf16,avx2,fma"

/// mx = max(mx, |x|) and mn1 = min(mn1, |x| - 1) over the 16-bit words x of
/// z (|x| the bf16 bits & 0x7fff; a zero word wraps to 0xffff and leaves
/// mn1 alone): the w magnitudes dp_exact checks.
[[gnu::always_inline]] inline __attribute__((target(KERN_GEMV_BF16_TARGET))) void magnitudes_bf16(
    const __m512i (&z)[4], __m512i& mn1, __m512i& mx) {
  const __m512i mag = _mm512_set1_epi16(0x7fff), one = _mm512_set1_epi16(1);
  for (int q = 0; q < 4; ++q) {
    const __m512i t = _mm512_and_si512(z[q], mag);
    mx = _mm512_max_epu16(mx, t);
    mn1 = _mm512_min_epu16(mn1, _mm512_sub_epi16(t, one));
  }
}

/// acc0[i] and acc1[i] += one 16-lane half of two w blocks (z0, z1 as
/// half_block_avx512's z) for every a row: `at` the a rows' blocks as bf16
/// pairs, element 2d in the high word (row stride `row_stride` dwords), at
/// this half; `lanes` masks the lanes that have a group. Each a load feeds
/// both rows' vdpbf16ps.
template <int M>
[[gnu::always_inline]] inline __attribute__((target(KERN_GEMV_BF16_TARGET))) void bf16_half_block(
    __m512 (&acc0)[M], __m512 (&acc1)[M], const __m512i (&z0)[4], const __m512i (&z1)[4], const uint32_t* at,
    int64_t row_stride, __mmask16 lanes) {
  __m512i v0[4], v1[4];
  transpose_half_avx512(z0, v0);
  transpose_half_avx512(z1, v1);
  for (int d = 0; d < 4; ++d) {
    const auto w0 = reinterpret_cast<__m512bh>(_mm512_rol_epi32(v0[d], 16));  // element 2d to the high word
    const auto w1 = reinterpret_cast<__m512bh>(_mm512_rol_epi32(v1[d], 16));
    for (int i = 0; i < M; ++i) {
      __m512i ai = _mm512_loadu_si512(at + i * row_stride + d * kLanes);
      asm("" : "+v"(ai));  // one load for both rows (GCC would fold it into both)
      const auto ab = reinterpret_cast<__m512bh>(ai);
      if (lanes == 0xffff) {
        acc0[i] = _mm512_dpbf16_ps(acc0[i], ab, w0);
        acc1[i] = _mm512_dpbf16_ps(acc1[i], ab, w1);
      } else {
        acc0[i] = _mm512_mask_dpbf16_ps(acc0[i], lanes, ab, w0);
        acc1[i] = _mm512_mask_dpbf16_ps(acc1[i], lanes, ab, w1);
      }
    }
  }
}

/// Half h (lanes 16h .. 16h + 15) of two w rows' split (w0, w1) for all M a
/// rows (their bf16 pair blocks at `lp`, row stride `row_stride` dwords) into
/// l0[i] and l1[i] at lane 16h, as pair_half_avx512 does, the w magnitudes
/// into mn1 / mx (magnitudes_bf16). The loop is pair_half_avx512's: one
/// shared skeleton would have to inline a block step built for avx512bf16
/// into code built without it, which GCC refuses for always_inline (a call
/// per block instead).
template <int M>
[[gnu::always_inline]] inline __attribute__((target(KERN_GEMV_BF16_TARGET))) void bf16_half(
    const uint16_t* w0, const uint16_t* w1, int h, int64_t gb, int64_t full, int64_t part, const uint32_t* lp,
    int64_t row_stride, const uint16_t* p0, const uint16_t* p1, int64_t pf_lines, float (*l0)[kLanes],
    float (*l1)[kLanes], __m512i& mn1, __m512i& mx) {
  constexpr int64_t kBlock = kBlockElems / 2;  // dwords per block
  __m512 acc0[M], acc1[M];
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (int64_t t = 0; t < full; ++t) {
    prefetch_part(p0, t, pf_lines);
    prefetch_part(p1, t, pf_lines);
    __m512i z0[4], z1[4];
    load_half_avx512(w0, gb + kLanes * t, h, 16, z0);
    load_half_avx512(w1, gb + kLanes * t, h, 16, z1);
    magnitudes_bf16(z0, mn1, mx);
    magnitudes_bf16(z1, mn1, mx);
    bf16_half_block<M>(acc0, acc1, z0, z1, lp + t * kBlock + 16 * h, row_stride, 0xffff);
  }
  const int cnt = static_cast<int>(std::clamp<int64_t>(part - 16 * h, 0, 16));  // lanes with a group
  if (cnt > 0) {
    __m512i z0[4], z1[4];
    load_half_avx512(w0, gb + kLanes * full, h, cnt, z0);  // zero past cnt: no effect on mn1 / mx
    load_half_avx512(w1, gb + kLanes * full, h, cnt, z1);
    magnitudes_bf16(z0, mn1, mx);
    magnitudes_bf16(z1, mn1, mx);
    bf16_half_block<M>(acc0, acc1, z0, z1, lp + full * kBlock + 16 * h, row_stride,
                       static_cast<__mmask16>((1u << cnt) - 1u));
  }
  for (int i = 0; i < M; ++i) {
    _mm512_store_ps(l0[i] + 16 * h, acc0[i]);
    _mm512_store_ps(l1[i] + 16 * h, acc1[i]);
  }
}

/// Whether this machine's vdpbf16ps is the two fmas, high word first, that
/// the bf16 path relies on (the SDM's definition; a CPU or an emulator that
/// rounded once per pair, or took the low word first, would give other bits):
/// 1024 lanes of in-range operands spread over 25 binades, with accumulators
/// that make the order and the rounding show (about 5% of such lanes differ
/// between the two orders on Zen 4), against the scalar fmas.
__attribute__((target(KERN_GEMV_BF16_TARGET))) bool vdpbf16ps_is_two_fmas() {
  uint32_t state = 0x9e3779b9u;
  const auto next = [&] {  // xorshift32: fixed, so the check is the same everywhere
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
  };
  const auto bf16 = [&] {  // sign, exponent 115..139, 7 mantissa bits
    const uint32_t r = next();
    return static_cast<uint16_t>(((r >> 31) << 15) | ((115 + r % 25) << 7) | ((r >> 8) & 0x7f));
  };
  for (int n = 0; n < 64; ++n) {
    alignas(64) uint32_t a[16], w[16];
    alignas(64) float acc[16], got[16];
    for (int j = 0; j < 16; ++j) {
      a[j] = bf16() | (static_cast<uint32_t>(bf16()) << 16);
      w[j] = bf16() | (static_cast<uint32_t>(bf16()) << 16);
      const auto mantissa = static_cast<float>(static_cast<int32_t>(next() % 2000001u) - 1000000);
      acc[j] = std::ldexp(mantissa, -static_cast<int>(next() % 24));
    }
    _mm512_store_ps(got, _mm512_dpbf16_ps(_mm512_load_ps(acc), reinterpret_cast<__m512bh>(_mm512_load_si512(a)),
                                          reinterpret_cast<__m512bh>(_mm512_load_si512(w))));
    for (int j = 0; j < 16; ++j) {
      const float hi = std::fma(bf16_to_f32(static_cast<uint16_t>(a[j] >> 16)),
                                bf16_to_f32(static_cast<uint16_t>(w[j] >> 16)), acc[j]);
      const float want = std::fma(bf16_to_f32(static_cast<uint16_t>(a[j] & 0xffff)),
                                  bf16_to_f32(static_cast<uint16_t>(w[j] & 0xffff)), hi);
      if (std::bit_cast<uint32_t>(got[j]) != std::bit_cast<uint32_t>(want)) return false;
    }
  }
  return true;
}

/// AVX512_BF16, M (2..8) a rows as bf16 pairs (`lp`, element 2d high): w rows
/// r into out[r * out_stride + i] as dots_avx512 does, two w rows at a time
/// (an odd last row beside itself), all M rows in one pass (vdpbf16ps needs
/// no widened operands: 2 x M accumulators and the transposed w fit); the
/// magnitudes of every w value read into *w_min1 / *w_max (magnitudes_bf16),
/// for the caller's dp_exact.
template <int M>
__attribute__((target(KERN_GEMV_BF16_TARGET))) void dots_avx512_bf16(
    const float* a, int64_t k, const uint16_t* w, int64_t rows, int64_t gb, int64_t ge, int64_t full, int64_t part,
    const uint32_t* lp, float* out, int64_t out_stride, int64_t readable, int64_t pf_lines, uint16_t* w_min1,
    uint16_t* w_max) {
  const int64_t row_stride = (full + (part > 0 ? 1 : 0)) * kBlockElems / 2;
  const int64_t done = gb + kLanes * full + part;
  const auto ahead = [&](int64_t r) -> const uint16_t* {
    return pf_lines > 0 ? w + std::min(r + kPrefetchRows, readable - 1) * k + 8 * gb : nullptr;
  };
  __m512i mn1 = _mm512_set1_epi16(-1), mx = _mm512_setzero_si512();
  for (int64_t r = 0; r < rows; r += 2) {
    const bool pair = r + 1 < rows;
    const uint16_t* w0 = w + r * k;
    const uint16_t* w1 = pair ? w0 + k : w0;
    alignas(64) float l0[M][kLanes], l1[M][kLanes];
    for (int h = 0; h < 2; ++h)
      bf16_half<M>(w0, w1, h, gb, full, part, lp, row_stride, h == 0 ? ahead(r) : nullptr,
                   h == 0 && pair ? ahead(r + 1) : nullptr, pf_lines, l0, l1, mn1, mx);
    for (int i = 0; i < M; ++i) {
      finish_avx512(a + i * k, k, w0, gb, done, ge, l0[i], out + r * out_stride + i);
      if (pair) finish_avx512(a + i * k, k, w1, gb, done, ge, l1[i], out + (r + 1) * out_stride + i);
    }
  }
  alignas(64) uint16_t lo[32], hi[32];
  _mm512_store_si512(lo, mn1);
  _mm512_store_si512(hi, mx);
  *w_min1 = *std::min_element(lo, lo + 32);
  *w_max = *std::max_element(hi, hi + 32);
}

/// acc[i] += at_i[l] x we[l], then at_i[l + 32] x wo[l] for the 8 lanes l of
/// every a row i (at_i = at + i row_stride: the row's lane-major block at
/// elements 2d and 2d + 1): one pair d's two fmas per lane, in order; lanes
/// outside `live` (all-ones floats mark a live lane; null: all live) keep
/// their sums exactly. Shared by the row-major and the packed AVX2 paths.
template <int M>
[[gnu::always_inline]] inline __attribute__((target("avx2,fma"))) void pair_fmas_avx2(
    __m256 (&acc)[M], const __m256 we, const __m256 wo, const float* at, int64_t row_stride, const __m256* live) {
  for (int i = 0; i < M; ++i) {
    const float* ai = at + i * row_stride;
    if (live == nullptr) {
      acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(ai), we, acc[i]);
      acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(ai + kLanes), wo, acc[i]);
    } else {
      acc[i] = _mm256_blendv_ps(acc[i], _mm256_fmadd_ps(_mm256_loadu_ps(ai), we, acc[i]), *live);
      acc[i] = _mm256_blendv_ps(acc[i], _mm256_fmadd_ps(_mm256_loadu_ps(ai + kLanes), wo, acc[i]), *live);
    }
  }
}

/// acc[i] += one quarter (8 lanes) of a w block for every a row: `gq` the
/// quarter's 8 groups, `at` the a rows' lane-major block at this quarter
/// (row stride `row_stride`); lanes outside `live` (all-ones floats mark a
/// live lane; null: all live) keep their sums exactly. The groups load as
/// 128-bit pairs (g, g + 4); a 4x4 dword transpose per 128-bit half gives
/// v[d] = dword d (elements 2d, 2d + 1) of the 8 groups.
template <int M>
[[gnu::always_inline]] inline __attribute__((target("avx2,fma"))) void quarter_block_avx2(
    __m256 (&acc)[M], const __m128i* gq, const float* at, int64_t row_stride, const __m256* live) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const __m256i ga = _mm256_loadu2_m128i(gq + 4, gq), gb = _mm256_loadu2_m128i(gq + 5, gq + 1);
  const __m256i gc = _mm256_loadu2_m128i(gq + 6, gq + 2), gd = _mm256_loadu2_m128i(gq + 7, gq + 3);
  const __m256i ab_lo = _mm256_unpacklo_epi32(ga, gb), ab_hi = _mm256_unpackhi_epi32(ga, gb);
  const __m256i cd_lo = _mm256_unpacklo_epi32(gc, gd), cd_hi = _mm256_unpackhi_epi32(gc, gd);
  const __m256i v[4] = {_mm256_unpacklo_epi64(ab_lo, cd_lo), _mm256_unpackhi_epi64(ab_lo, cd_lo),
                        _mm256_unpacklo_epi64(ab_hi, cd_hi), _mm256_unpackhi_epi64(ab_hi, cd_hi)};
  for (int d = 0; d < 4; ++d) {
    const __m256 we = _mm256_castsi256_ps(_mm256_slli_epi32(v[d], 16));  // element 2d (low word)
    const __m256 wo = _mm256_castsi256_ps(_mm256_and_si256(v[d], high));  // element 2d + 1
    pair_fmas_avx2<M>(acc, we, wo, at + 2 * d * kLanes, row_stride, live);
  }
}

/// AVX2: lanes 8q..8q+7 in one ymm, one quarter q at a time (M accumulators
/// fit the 16 registers). The split's last `part` (< 32) whole groups run
/// from a zero-padded copy with the missing lanes masked.
template <int M>
__attribute__((target("avx2,fma"))) void row_avx2(const float* a, int64_t k, const uint16_t* w, int64_t gb,
                                                  int64_t ge, int64_t full, int64_t part, const float* la,
                                                  float* out) {
  alignas(32) float lanes[M][kLanes];
  const int64_t row_stride = (full + (part > 0 ? 1 : 0)) * kBlockElems;
  const auto* g16 = reinterpret_cast<const __m128i*>(w);  // w as 16-byte groups
  alignas(32) uint16_t tail[kBlockElems] = {};            // the partial block's groups, zero-padded
  if (part > 0) std::copy_n(w + 8 * (gb + kLanes * full), 8 * part, tail);
  for (int q = 0; q < 4; ++q) {
    __m256 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t t = 0; t < full; ++t)
      quarter_block_avx2<M>(acc, g16 + gb + kLanes * t + 8 * q, la + t * kBlockElems + 8 * q, row_stride, nullptr);
    const int cnt = static_cast<int>(std::clamp<int64_t>(part - 8 * q, 0, 8));  // lanes with a group
    if (cnt > 0) {
      alignas(32) int32_t bits[8];
      for (int l = 0; l < 8; ++l) bits[l] = l < cnt ? -1 : 0;
      const __m256 live = _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(bits)));
      quarter_block_avx2<M>(acc, reinterpret_cast<const __m128i*>(tail) + 8 * q, la + full * kBlockElems + 8 * q,
                            row_stride, &live);
    }
    for (int i = 0; i < M; ++i) _mm256_store_ps(lanes[i] + 8 * q, acc[i]);
  }
  for (int i = 0; i < M; ++i) {  // the partial last group, if any, then the butterfly
    scalar_groups(a + i * k, w, k, gb, gb + kLanes * full + part, ge, lanes[i]);
    out[i] = butterfly0(lanes[i]);
  }
}

/// AVX2, w rows r (row stride k) into out[r * out_stride + i], one at a time.
template <int M>
__attribute__((target("avx2,fma"))) void dots_avx2(const float* a, int64_t k, const uint16_t* w, int64_t rows,
                                                   int64_t gb, int64_t ge, int64_t full, int64_t part,
                                                   const float* la, const uint32_t* /*lp: AVX-512 only*/,
                                                   float* out, int64_t out_stride, int64_t /*readable*/,
                                                   int64_t /*pf_lines: AVX-512 only*/) {
  for (int64_t r = 0; r < rows; ++r) row_avx2<M>(a, k, w + r * k, gb, ge, full, part, la, out + r * out_stride);
}

/// The function of each path for M a rows: (a, k, w, rows, gb, ge, full,
/// part, lane-major a, the same as bf16 pairs or null, out, out stride,
/// rows readable from w, lines per prefetched part or 0).
using DotsFn = void (*)(const float*, int64_t, const uint16_t*, int64_t, int64_t, int64_t, int64_t, int64_t,
                        const float*, const uint32_t*, float*, int64_t, int64_t, int64_t);

template <int... Ms>
constexpr DotsFn avx512_table(int m, std::integer_sequence<int, Ms...>) {
  DotsFn fns[] = {&dots_avx512<Ms + 1>...};
  return fns[m - 1];
}
/// The AVX512_BF16 function for M a rows: DotsFn's arguments but the f32
/// blocks, then the w magnitudes' outputs (dots_avx512_bf16).
using Bf16DotsFn = void (*)(const float*, int64_t, const uint16_t*, int64_t, int64_t, int64_t, int64_t, int64_t,
                            const uint32_t*, float*, int64_t, int64_t, int64_t, uint16_t*, uint16_t*);

template <int... Ms>
constexpr Bf16DotsFn avx512_bf16_table(int m, std::integer_sequence<int, Ms...>) {
  Bf16DotsFn fns[] = {&dots_avx512_bf16<Ms + 2>...};
  return fns[m - 2];
}
template <int... Ms>
constexpr DotsFn avx2_table(int m, std::integer_sequence<int, Ms...>) {
  DotsFn fns[] = {&dots_avx2<Ms + 1>...};
  return fns[m - 1];
}

// The packed w (gemv_packed.h): a 64-byte load at block t, pair d, half h is
// lanes 16h .. 16h + 15's elements 2d (high word) and 2d + 1 (low word), so a
// lane's operands sit in its SIMD position with no transposition: a mask and
// a shift widen them for the fmas, or vdpbf16ps takes them as they are. The
// split's last `part` (< 32) groups are packed [d][lane 0..part-1]: masked
// loads at 2 d part (+ 32 for half 1).

/// The mask of half h's lanes in a split's partial block of `part` lanes.
[[gnu::always_inline]] inline __mmask16 part_mask(int64_t part, int h) {
  const int cnt = static_cast<int>(std::clamp<int64_t>(part - 16 * h, 0, 16));
  return static_cast<__mmask16>((1u << cnt) - 1u);
}

/// lo[i] / hi[i] += one pair d of a packed w block's halves (zl: lanes
/// 0..15, zh: lanes 16..31) for every a row, `at` the a rows' lane-major
/// block at element 2d (row stride `row_stride`); lanes outside ml / mh keep
/// their sums exactly.
template <int M>
[[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma"))) void packed_step_avx512(
    __m512 (&lo)[M], __m512 (&hi)[M], const __m512i zl, const __m512i zh, const float* at, int64_t row_stride,
    __mmask16 ml, __mmask16 mh) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512 el = _mm512_castsi512_ps(_mm512_and_si512(zl, high)), ol = _mm512_castsi512_ps(_mm512_slli_epi32(zl, 16));
  const __m512 eh = _mm512_castsi512_ps(_mm512_and_si512(zh, high)), oh = _mm512_castsi512_ps(_mm512_slli_epi32(zh, 16));
  for (int i = 0; i < M; ++i) {
    const float* ai = at + i * row_stride;
    if (ml == 0xffff && mh == 0xffff) {
      lo[i] = _mm512_fmadd_ps(_mm512_loadu_ps(ai), el, lo[i]);
      hi[i] = _mm512_fmadd_ps(_mm512_loadu_ps(ai + 16), eh, hi[i]);
      lo[i] = _mm512_fmadd_ps(_mm512_loadu_ps(ai + kLanes), ol, lo[i]);
      hi[i] = _mm512_fmadd_ps(_mm512_loadu_ps(ai + kLanes + 16), oh, hi[i]);
    } else {
      lo[i] = _mm512_mask3_fmadd_ps(_mm512_loadu_ps(ai), el, lo[i], ml);
      hi[i] = _mm512_mask3_fmadd_ps(_mm512_loadu_ps(ai + 16), eh, hi[i], mh);
      lo[i] = _mm512_mask3_fmadd_ps(_mm512_loadu_ps(ai + kLanes), ol, lo[i], ml);
      hi[i] = _mm512_mask3_fmadd_ps(_mm512_loadu_ps(ai + kLanes + 16), oh, hi[i], mh);
    }
  }
}

/// AVX-512 fma path on a packed w, M (1..8) a rows (lane-major blocks `la`):
/// w rows r (packed, row stride k, `wp` at the split's first group) into
/// out[r * out_stride + i]; both halves of every a row in one pass (2M
/// accumulators), the row kPrefetchRows ahead prefetched as dots_avx512 does.
template <int M>
__attribute__((target("avx512f,avx2,fma"))) void packed_avx512(const uint16_t* wp, int64_t k, int64_t rows,
                                                                int64_t full, int64_t part, const float* la,
                                                                const uint32_t* /*lp*/, float* out,
                                                                int64_t out_stride, int64_t readable,
                                                                int64_t pf_lines) {
  const int64_t row_stride = (full + (part > 0 ? 1 : 0)) * kBlockElems;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* wr = wp + r * k;
    const uint16_t* pf = pf_lines > 0 ? wp + std::min(r + kPrefetchRows, readable - 1) * k : nullptr;
    __m512 lo[M], hi[M];
    for (int i = 0; i < M; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t t = 0; t < full; ++t) {
      prefetch_part(pf, t, pf_lines);
      const uint16_t* blk = wr + kBlockElems * t;
      for (int d = 0; d < 4; ++d)
        packed_step_avx512<M>(lo, hi, _mm512_loadu_si512(blk + 64 * d), _mm512_loadu_si512(blk + 64 * d + 32),
                              la + kBlockElems * t + 2 * d * kLanes, row_stride, 0xffff, 0xffff);
    }
    if (part > 0) {
      const uint16_t* blk = wr + kBlockElems * full;
      const __mmask16 ml = part_mask(part, 0), mh = part_mask(part, 1);
      for (int d = 0; d < 4; ++d)
        packed_step_avx512<M>(lo, hi, _mm512_maskz_loadu_epi32(ml, blk + 2 * d * part),
                              _mm512_maskz_loadu_epi32(mh, blk + 2 * d * part + 32),
                              la + kBlockElems * full + 2 * d * kLanes, row_stride, ml, mh);
    }
    finish_rows_avx512<M>(lo, hi, out + r * out_stride);
  }
}

/// The AVX512_BF16 packed path's w rows two at a time for M (2..8) a rows:
/// half h (lanes 16h .. 16h + 15) of both rows, then the other half, so that
/// each a load feeds both rows' vdpbf16ps (2M accumulators; at M = 8 a
/// load per vdpbf16ps otherwise bounded the loop). Each packed 64-byte line
/// holds one half, so the two passes read disjoint lines. Returns the rows
/// done (an even count; the caller runs an odd last one alone).
template <int M>
[[gnu::always_inline]] inline __attribute__((target(KERN_GEMV_BF16_TARGET))) int64_t packed_pairs_avx512_bf16(
    const uint16_t* wp, int64_t k, int64_t rows, int64_t full, int64_t part, const uint32_t* lp, float* out,
    int64_t out_stride, int64_t readable, int64_t pf_lines) {
  constexpr int64_t kBlock = kBlockElems / 2;  // dwords per block
  const int64_t row_stride = (full + (part > 0 ? 1 : 0)) * kBlock;
  int64_t r = 0;
  for (; r + 1 < rows; r += 2) {
    const uint16_t* w0 = wp + r * k;
    const uint16_t* w1 = w0 + k;
    alignas(64) float l0[M][kLanes], l1[M][kLanes];
    for (int h = 0; h < 2; ++h) {
      // Rows ahead, prefetched during the first half's pass (null: none).
      const auto ahead = [&](int64_t rows_ahead) {
        return pf_lines > 0 && h == 0 ? wp + std::min(r + rows_ahead, readable - 1) * k : nullptr;
      };
      const uint16_t *n0 = ahead(kPairL1Rows), *n1 = ahead(kPairL1Rows + 1);
      const uint16_t *f0 = ahead(kPairL2Rows), *f1 = ahead(kPairL2Rows + 1);
      __m512 acc0[M], acc1[M];
      for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
      for (int64_t t = 0; t < full; ++t) {
        prefetch_part<_MM_HINT_T0>(n0, t, pf_lines);
        prefetch_part<_MM_HINT_T0>(n1, t, pf_lines);
        prefetch_part(f0, t, pf_lines);
        prefetch_part(f1, t, pf_lines);
        for (int d = 0; d < 4; ++d) {
          const auto z0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w0 + kBlockElems * t + 64 * d + 32 * h));
          const auto z1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w1 + kBlockElems * t + 64 * d + 32 * h));
          for (int i = 0; i < M; ++i) {
            __m512i ai = _mm512_loadu_si512(lp + i * row_stride + kBlock * t + d * kLanes + 16 * h);
            asm("" : "+v"(ai));  // one load for both rows (GCC would fold it into both)
            acc0[i] = _mm512_dpbf16_ps(acc0[i], reinterpret_cast<__m512bh>(ai), z0);
            acc1[i] = _mm512_dpbf16_ps(acc1[i], reinterpret_cast<__m512bh>(ai), z1);
          }
        }
      }
      if (part > 0) {
        const __mmask16 mk = part_mask(part, h);
        for (int d = 0; d < 4; ++d) {
          const auto z0 = reinterpret_cast<__m512bh>(
              _mm512_maskz_loadu_epi32(mk, w0 + kBlockElems * full + 2 * d * part + 32 * h));
          const auto z1 = reinterpret_cast<__m512bh>(
              _mm512_maskz_loadu_epi32(mk, w1 + kBlockElems * full + 2 * d * part + 32 * h));
          for (int i = 0; i < M; ++i) {
            const auto ai = reinterpret_cast<__m512bh>(
                _mm512_loadu_si512(lp + i * row_stride + kBlock * full + d * kLanes + 16 * h));
            acc0[i] = _mm512_mask_dpbf16_ps(acc0[i], mk, ai, z0);
            acc1[i] = _mm512_mask_dpbf16_ps(acc1[i], mk, ai, z1);
          }
        }
      }
      for (int i = 0; i < M; ++i) {
        _mm512_store_ps(l0[i] + 16 * h, acc0[i]);
        _mm512_store_ps(l1[i] + 16 * h, acc1[i]);
      }
    }
    for (int i = 0; i < M; ++i) {
      finish_avx512(nullptr, 0, nullptr, 0, 0, 0, l0[i], out + r * out_stride + i);
      finish_avx512(nullptr, 0, nullptr, 0, 0, 0, l1[i], out + (r + 1) * out_stride + i);
    }
  }
  return r;
}

/// w rows the AVX512_BF16 packed path takes at once for one a row. A row's
/// two chains of vdpbf16ps (lanes 0..15 and 16..31; each lane's fmas must
/// stay in order) are each as long as its blocks x 4: one row at a time,
/// the loop waited on them, and four rows' eight chains took 20-28% less
/// CPU time over a decode step's streamed w (0.6B and 1.7B shapes alike; 2
/// rows measured no better than 1, 8 no better than 4; docs/kernels.md
/// "Session 7").
constexpr int kM1Rows = 4;

/// The AVX512_BF16 packed path for one a row (`lp`, its bf16 pairs), R w
/// rows at a time: both halves of each row (2R accumulators), each a load
/// feeding all R rows. No software prefetch: beside the four rows' loads
/// the hardware prefetcher keeps up, and prefetching each row's part four
/// rows ahead measured 1-10% slower (docs/kernels.md "Session 7"). Returns
/// the rows done (a multiple of R); the caller runs the rest one by one.
template <int R>
[[gnu::always_inline]] inline __attribute__((target(KERN_GEMV_BF16_TARGET))) int64_t packed_rows_m1_avx512_bf16(
    const uint16_t* wp, int64_t k, int64_t rows, int64_t full, int64_t part, const uint32_t* lp, float* out,
    int64_t out_stride) {
  constexpr int64_t kBlock = kBlockElems / 2;  // dwords per block
  int64_t r = 0;
  for (; r + R <= rows; r += R) {
    const uint16_t* wr = wp + r * k;  // row j at wr + j k
    __m512 lo[R], hi[R];
    for (int j = 0; j < R; ++j) lo[j] = hi[j] = _mm512_setzero_ps();
    for (int64_t t = 0; t < full; ++t)
      for (int d = 0; d < 4; ++d) {
        const uint32_t* ai = lp + kBlock * t + d * kLanes;
        __m512i al = _mm512_loadu_si512(ai), ah = _mm512_loadu_si512(ai + 16);
        asm("" : "+v"(al), "+v"(ah));  // one load for all R rows (GCC would fold it into each)
        for (int j = 0; j < R; ++j) {
          const uint16_t* blk = wr + j * k + kBlockElems * t + 64 * d;
          lo[j] = _mm512_dpbf16_ps(lo[j], reinterpret_cast<__m512bh>(al),
                                   reinterpret_cast<__m512bh>(_mm512_loadu_si512(blk)));
          hi[j] = _mm512_dpbf16_ps(hi[j], reinterpret_cast<__m512bh>(ah),
                                   reinterpret_cast<__m512bh>(_mm512_loadu_si512(blk + 32)));
        }
      }
    if (part > 0) {
      const __mmask16 ml = part_mask(part, 0), mh = part_mask(part, 1);
      for (int d = 0; d < 4; ++d) {
        const uint32_t* ai = lp + kBlock * full + d * kLanes;
        const auto al = reinterpret_cast<__m512bh>(_mm512_loadu_si512(ai));
        const auto ah = reinterpret_cast<__m512bh>(_mm512_loadu_si512(ai + 16));
        for (int j = 0; j < R; ++j) {
          const uint16_t* blk = wr + j * k + kBlockElems * full + 2 * d * part;
          lo[j] = _mm512_mask_dpbf16_ps(lo[j], ml, al, reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi32(ml, blk)));
          hi[j] = _mm512_mask_dpbf16_ps(hi[j], mh, ah,
                                        reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi32(mh, blk + 32)));
        }
      }
    }
    for (int j = 0; j < R; ++j) {
      const __m512 lo_j[1] = {lo[j]}, hi_j[1] = {hi[j]};
      finish_rows_avx512<1>(lo_j, hi_j, out + (r + j) * out_stride);
    }
  }
  return r;
}

/// AVX512_BF16 path on a packed w, M (1..8) a rows as bf16 pairs (`lp`,
/// element 2d high, row stride = blocks x 128 dwords): one vdpbf16ps per 64
/// bytes of w per a row, the lane's two fmas (vdpbf16ps_is_two_fmas); the
/// caller has checked dp_exact for this w's and the a rows' magnitudes.
/// Above M = 1 two w rows at a time (packed_pairs_avx512_bf16), at M = 1
/// kM1Rows (packed_rows_m1_avx512_bf16); the rows left over one by one.
template <int M>
__attribute__((target(KERN_GEMV_BF16_TARGET))) void packed_avx512_bf16(const uint16_t* wp, int64_t k, int64_t rows,
                                                                       int64_t full, int64_t part,
                                                                       const float* /*la*/, const uint32_t* lp,
                                                                       float* out, int64_t out_stride,
                                                                       int64_t readable, int64_t pf_lines) {
  constexpr int64_t kBlock = kBlockElems / 2;  // dwords per block
  const int64_t row_stride = (full + (part > 0 ? 1 : 0)) * kBlock;
  int64_t r = 0;
  if constexpr (M > 1)
    r = packed_pairs_avx512_bf16<M>(wp, k, rows, full, part, lp, out, out_stride, readable, pf_lines);
  else
    r = packed_rows_m1_avx512_bf16<kM1Rows>(wp, k, rows, full, part, lp, out, out_stride);
  for (; r < rows; ++r) {
    const uint16_t* wr = wp + r * k;
    const uint16_t* pf = pf_lines > 0 ? wp + std::min(r + kPrefetchRows, readable - 1) * k : nullptr;
    __m512 lo[M], hi[M];
    for (int i = 0; i < M; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t t = 0; t < full; ++t) {
      prefetch_part(pf, t, pf_lines);
      const uint16_t* blk = wr + kBlockElems * t;
      for (int d = 0; d < 4; ++d) {
        const auto zl = reinterpret_cast<__m512bh>(_mm512_loadu_si512(blk + 64 * d));
        const auto zh = reinterpret_cast<__m512bh>(_mm512_loadu_si512(blk + 64 * d + 32));
        for (int i = 0; i < M; ++i) {
          const uint32_t* ai = lp + i * row_stride + kBlock * t + d * kLanes;
          lo[i] = _mm512_dpbf16_ps(lo[i], reinterpret_cast<__m512bh>(_mm512_loadu_si512(ai)), zl);
          hi[i] = _mm512_dpbf16_ps(hi[i], reinterpret_cast<__m512bh>(_mm512_loadu_si512(ai + 16)), zh);
        }
      }
    }
    if (part > 0) {
      const uint16_t* blk = wr + kBlockElems * full;
      const __mmask16 ml = part_mask(part, 0), mh = part_mask(part, 1);
      for (int d = 0; d < 4; ++d) {
        const auto zl = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi32(ml, blk + 2 * d * part));
        const auto zh = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi32(mh, blk + 2 * d * part + 32));
        for (int i = 0; i < M; ++i) {
          const uint32_t* ai = lp + i * row_stride + kBlock * full + d * kLanes;
          lo[i] = _mm512_mask_dpbf16_ps(lo[i], ml, reinterpret_cast<__m512bh>(_mm512_loadu_si512(ai)), zl);
          hi[i] = _mm512_mask_dpbf16_ps(hi[i], mh, reinterpret_cast<__m512bh>(_mm512_loadu_si512(ai + 16)), zh);
        }
      }
    }
    finish_rows_avx512<M>(lo, hi, out + r * out_stride);
  }
}

/// acc[i] += one pair d of a packed w block's quarter (z: 8 lanes) for
/// every a row, `at` the a rows' lane-major block at element 2d and this
/// quarter (row stride `row_stride`); lanes outside `live` (null: all live)
/// keep their sums exactly.
template <int M>
[[gnu::always_inline]] inline __attribute__((target("avx2,fma"))) void packed_step_avx2(
    __m256 (&acc)[M], const __m256i z, const float* at, int64_t row_stride, const __m256* live) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const __m256 we = _mm256_castsi256_ps(_mm256_and_si256(z, high));  // element 2d (high word)
  const __m256 wo = _mm256_castsi256_ps(_mm256_slli_epi32(z, 16));   // element 2d + 1
  pair_fmas_avx2<M>(acc, we, wo, at, row_stride, live);
}

/// AVX2 path on a packed w, M (1..8) a rows: lanes 8q .. 8q + 7 in one ymm,
/// one quarter q at a time (M accumulators fit the 16 registers; the row's
/// split is read once per quarter, from L1 after the first).
template <int M>
__attribute__((target("avx2,fma"))) void packed_avx2(const uint16_t* wp, int64_t k, int64_t rows, int64_t full,
                                                     int64_t part, const float* la, const uint32_t* /*lp*/,
                                                     float* out, int64_t out_stride, int64_t /*readable*/,
                                                     int64_t /*pf_lines*/) {
  const int64_t row_stride = (full + (part > 0 ? 1 : 0)) * kBlockElems;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* wr = wp + r * k;
    alignas(32) float lanes[M][kLanes];
    for (int q = 0; q < 4; ++q) {
      __m256 acc[M];
      for (int i = 0; i < M; ++i) acc[i] = _mm256_setzero_ps();
      for (int64_t t = 0; t < full; ++t)
        for (int d = 0; d < 4; ++d)
          packed_step_avx2<M>(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr + kBlockElems * t + 64 * d + 16 * q)),
                              la + kBlockElems * t + 2 * d * kLanes + 8 * q, row_stride, nullptr);
      const int cnt = static_cast<int>(std::clamp<int64_t>(part - 8 * q, 0, 8));  // lanes with a group
      if (cnt > 0) {
        alignas(32) int32_t bits[8];
        for (int l = 0; l < 8; ++l) bits[l] = l < cnt ? -1 : 0;
        const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits));
        const __m256 live = _mm256_castsi256_ps(mask);
        const uint16_t* blk = wr + kBlockElems * full;
        for (int d = 0; d < 4; ++d)
          packed_step_avx2<M>(acc, _mm256_maskload_epi32(reinterpret_cast<const int*>(blk + 2 * d * part + 16 * q), mask),
                              la + kBlockElems * full + 2 * d * kLanes + 8 * q, row_stride, &live);
      }
      for (int i = 0; i < M; ++i) _mm256_store_ps(lanes[i] + 8 * q, acc[i]);
    }
    for (int i = 0; i < M; ++i) out[r * out_stride + i] = butterfly0(lanes[i]);
  }
}

/// A packed path's function for M a rows: (packed w at the split, k, rows,
/// full, part, lane-major a, a pairs or null, out, out stride, readable
/// rows, lines per prefetched part or 0).
using PackedFn = void (*)(const uint16_t*, int64_t, int64_t, int64_t, int64_t, const float*, const uint32_t*,
                          float*, int64_t, int64_t, int64_t);

template <int... Ms>
PackedFn packed_table(GemvIsa isa, bool bf16, int m, std::integer_sequence<int, Ms...>) {
  PackedFn avx512[] = {&packed_avx512<Ms + 1>...};
  PackedFn avx512_bf16[] = {&packed_avx512_bf16<Ms + 1>...};
  PackedFn avx2[] = {&packed_avx2<Ms + 1>...};
  if (isa == GemvIsa::kAvx2) return avx2[m - 1];
  return bf16 ? avx512_bf16[m - 1] : avx512[m - 1];
}

#endif  // KERN_GEMV_X86

}  // namespace

bool gemv_isa_supported(GemvIsa isa) {
  switch (isa) {
    case GemvIsa::kPortable: return true;
#if KERN_GEMV_X86
    case GemvIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemvIsa::kAvx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    case GemvIsa::kAvx512Bf16: {
      static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("fma") &&
                             vdpbf16ps_is_two_fmas();
      return ok;
    }
#else
    case GemvIsa::kAvx2:
    case GemvIsa::kAvx512:
    case GemvIsa::kAvx512Bf16: return false;
#endif
  }
  return false;
}

bool vdpbf16ps_exact(uint16_t a_min1, uint16_t a_max, uint16_t w_min1, uint16_t w_max) {
#if KERN_GEMV_X86
  return dp_exact(a_min1, a_max, w_min1, w_max);
#else
  (void)a_min1, (void)a_max, (void)w_min1, (void)w_max;
  return false;
#endif
}

GemvIsa gemv_best_isa() {
  static const GemvIsa best = gemv_isa_supported(GemvIsa::kAvx512Bf16) ? GemvIsa::kAvx512Bf16
                              : gemv_isa_supported(GemvIsa::kAvx512) ? GemvIsa::kAvx512
                              : gemv_isa_supported(GemvIsa::kAvx2) ? GemvIsa::kAvx2
                                                                   : GemvIsa::kPortable;
  return best;
}

const char* gemv_isa_name(GemvIsa isa) {
  switch (isa) {
    case GemvIsa::kPortable: return "portable";
    case GemvIsa::kAvx2: return "avx2";
    case GemvIsa::kAvx512: return "avx512";
    case GemvIsa::kAvx512Bf16: return "avx512-bf16";
  }
  return "?";
}

GemvLaneDots::GemvLaneDots(const float* a, int64_t m, int64_t k, int64_t splits, GemvIsa isa)
    : GemvLaneDots(a, m, k, splits, isa, 1, {}) {}

GemvLaneDots::GemvLaneDots(const float* a, int64_t m, int64_t k, int64_t splits, GemvIsa isa, unsigned threads,
                           const std::function<void(int64_t)>& fill)
    : a_(a), m_(m), k_(k), isa_(gemv_isa_supported(isa) ? isa : GemvIsa::kPortable) {
  const int64_t groups = (k + 7) / 8;
  const int64_t per_split = (groups + splits - 1) / splits;
  const bool vector = isa_ != GemvIsa::kPortable && m >= 1 && m <= kMaxM;
  if (!vector) isa_ = GemvIsa::kPortable;
  int64_t size = 0;
  splits_.resize(static_cast<size_t>(splits));
  for (int64_t s = 0; s < splits; ++s) {
    Split& sp = splits_[static_cast<size_t>(s)];
    sp.gb = std::min(groups, s * per_split);
    sp.ge = std::min(groups, sp.gb + per_split);
    // The last group is partial when 8 does not divide k: it stays scalar.
    const int64_t whole_end = (k % 8 != 0 && sp.ge == groups && sp.ge > sp.gb) ? sp.ge - 1 : sp.ge;
    sp.full = vector ? (whole_end - sp.gb) / kLanes : 0;
    sp.part = vector ? (whole_end - sp.gb) % kLanes : 0;
    sp.offset = size;
    size += m * (sp.full + (sp.part > 0 ? 1 : 0)) * kBlockElems;
  }
  // Uninitialised: every element is written below (a launch's m * k floats
  // of zeroing were a visible share of an m = 8 step's serial part).
  lane_a_.reset(new float[static_cast<size_t>(size)]);
  // The bf16 pairs, for the AVX-512 pair paths (avx512 above m = 4,
  // avx512-bf16 above m = 1), kept when every a value is a bf16 (low 16 bits
  // zero), as the decode GEMVs' are: exact, so the same bits from half the
  // bytes.
  // At m = 1 only the packed w's bf16 path reads them (dots_packed): the
  // row-major one needs m >= 2 to pay for its w magnitude check.
  const bool want_pairs = (isa_ == GemvIsa::kAvx512 && m > 4) || isa_ == GemvIsa::kAvx512Bf16;
  if (want_pairs) pairs_.reset(new uint32_t[static_cast<size_t>(size / 2)]);
  std::vector<char> exact(static_cast<size_t>(m), 1);
  std::vector<uint16_t> row_min1(static_cast<size_t>(m), 0xffff), row_max(static_cast<size_t>(m), 0);
  run_ranges(m, std::max(1u, threads), [&](unsigned, int64_t rb, int64_t re) {
    for (int64_t i = rb; i < re; ++i) {
      if (fill) fill(i);
      const float* row = a + i * k;
      uint32_t low_bits = 0;  // OR of the lane values' low 16 bits
      for (const Split& sp : splits_) {
        const int64_t blocks = sp.full + (sp.part > 0 ? 1 : 0);
        float* dst = lane_a_.get() + sp.offset + i * blocks * kBlockElems;
        for (int64_t t = 0; t < blocks; ++t) {
          const int live = t < sp.full ? kLanes : static_cast<int>(sp.part);  // lanes past `part` hold zero
          for (int e = 0; e < 8; ++e)
            for (int l = 0; l < kLanes; ++l) {
              const float x = l < live ? row[8 * (sp.gb + kLanes * t + l) + e] : 0.0f;
              dst[t * kBlockElems + e * kLanes + l] = x;
              low_bits |= std::bit_cast<uint32_t>(x) & 0xffffu;
            }
        }
        if (!want_pairs || low_bits != 0) continue;
        uint32_t* pairs = pairs_.get() + (sp.offset + i * blocks * kBlockElems) / 2;
        uint16_t mn1 = row_min1[static_cast<size_t>(i)], mx = row_max[static_cast<size_t>(i)];
        for (int64_t t = 0; t < blocks; ++t) {
          const float* blk = dst + t * kBlockElems;
          for (int d = 0; d < 4; ++d)
            for (int l = 0; l < kLanes; ++l) {
              const uint32_t even = std::bit_cast<uint32_t>(blk[2 * d * kLanes + l]);
              const uint32_t odd = std::bit_cast<uint32_t>(blk[(2 * d + 1) * kLanes + l]);
              pairs[t * (kBlockElems / 2) + d * kLanes + l] = even | (odd >> 16);  // element 2d high
              for (const uint32_t x : {even, odd}) {  // the magnitudes dp_exact checks
                const auto abs = static_cast<uint16_t>((x >> 16) & 0x7fffu);
                mx = std::max(mx, abs);
                mn1 = std::min(mn1, static_cast<uint16_t>(abs - 1));
              }
            }
        }
        row_min1[static_cast<size_t>(i)] = mn1;
        row_max[static_cast<size_t>(i)] = mx;
      }
      exact[static_cast<size_t>(i)] = low_bits == 0;
    }
  });
  if (want_pairs && std::find(exact.begin(), exact.end(), 0) != exact.end()) pairs_.reset();
  a_min1_ = *std::min_element(row_min1.begin(), row_min1.end());
  a_max_ = *std::max_element(row_max.begin(), row_max.end());
  // An inf, NaN or denormal a fails dp_exact with any nonzero w.
  if (a_max_ >= 0x7f80 || (a_min1_ != 0xffff && a_min1_ + 1 < 0x80)) bf16_off_.store(true, std::memory_order_relaxed);
}

void GemvLaneDots::dots(const uint16_t* w, int64_t rows, float* out, int64_t readable_rows) const {
  const auto splits = static_cast<int64_t>(splits_.size());
  const int64_t readable = std::max(rows, readable_rows);
  for (int64_t s = 0; s < splits; ++s) {
    const Split& sp = splits_[static_cast<size_t>(s)];
    float* o = out + s * m_;
    const int64_t o_stride = splits * m_;
#if KERN_GEMV_X86
    const float* la = lane_a_.get() + sp.offset;
    if (isa_ != GemvIsa::kPortable) {
      const DotsFn fn = isa_ == GemvIsa::kAvx512 || isa_ == GemvIsa::kAvx512Bf16
                            ? avx512_table(static_cast<int>(m_), std::make_integer_sequence<int, kMaxM>{})
                            : avx2_table(static_cast<int>(m_), std::make_integer_sequence<int, kMaxM>{});
      const uint32_t* lp = pairs_ == nullptr ? nullptr : pairs_.get() + sp.offset / 2;
      // Each split's pass prefetches the split's lines (prefetch_part); a
      // split with no full block prefetches nothing.
      const int64_t split_lines = (16 * (sp.ge - sp.gb) + 63) / 64;
      const int64_t pf_lines = sp.full > 0 ? (split_lines + sp.full - 1) / sp.full : 0;
      if (isa_ == GemvIsa::kAvx512Bf16 && m_ > 1 && lp != nullptr && !bf16_off_.load(std::memory_order_relaxed)) {
        uint16_t w_min1 = 0, w_max = 0;
        avx512_bf16_table(static_cast<int>(m_), std::make_integer_sequence<int, kMaxM - 1>{})(
            a_, k_, w, rows, sp.gb, sp.ge, sp.full, sp.part, lp, o, o_stride, readable, pf_lines, &w_min1, &w_max);
        if (dp_exact(a_min1_, a_max_, w_min1, w_max)) continue;
        // Rare (a denormal, an inf, products beyond 2^-103 .. 2^126): the
        // same rows again by the fma path, whose bits these are, and this
        // launch's other calls straight to it (its w likely has more such
        // values: each would cost both passes). Either path, the same bits.
        bf16_off_.store(true, std::memory_order_relaxed);
      }
      fn(a_, k_, w, rows, sp.gb, sp.ge, sp.full, sp.part, la, lp, o, o_stride, readable, pf_lines);
      continue;
    }
#endif
    for (int64_t r = 0; r < rows; ++r) dots_portable(a_, m_, k_, w + r * k_, sp.gb, sp.ge, o + r * o_stride);
  }
}

void GemvLaneDots::dots_packed(const uint16_t* wp, int64_t rows, float* out, int64_t readable_rows, uint16_t w_min1,
                               uint16_t w_max) const {
  const auto splits = static_cast<int64_t>(splits_.size());
  const int64_t readable = std::max(rows, readable_rows);
#if KERN_GEMV_X86
  // vdpbf16ps when it gives the fmas' bits for every product of these a
  // rows and this w (whose range was taken when it was packed): one check
  // per call instead of one per 64 bytes of w.
  const bool bf16 = isa_ == GemvIsa::kAvx512Bf16 && pairs_ != nullptr && dp_exact(a_min1_, a_max_, w_min1, w_max);
#else
  (void)w_min1, (void)w_max;
#endif
  for (int64_t s = 0; s < splits; ++s) {
    const Split& sp = splits_[static_cast<size_t>(s)];
    float* o = out + s * m_;
    const int64_t o_stride = splits * m_;
    const uint16_t* ws = wp + 8 * sp.gb;  // the split's packed groups (same offsets as row-major)
#if KERN_GEMV_X86
    if (isa_ != GemvIsa::kPortable) {
      const int64_t split_lines = (16 * (sp.ge - sp.gb) + 63) / 64;
      const int64_t pf_lines = sp.full > 0 ? (split_lines + sp.full - 1) / sp.full : 0;
      const uint32_t* lp = pairs_ == nullptr ? nullptr : pairs_.get() + sp.offset / 2;
      packed_table(isa_, bf16, static_cast<int>(m_), std::make_integer_sequence<int, kMaxM>{})(
          ws, k_, rows, sp.full, sp.part, lane_a_.get() + sp.offset, lp, o, o_stride, readable, pf_lines);
      continue;
    }
#endif
    for (int64_t r = 0; r < rows; ++r) dots_packed_portable(a_, m_, k_, ws + r * k_, sp.gb, sp.ge, o + r * o_stride);
  }
}

}  // namespace kern::cpu
