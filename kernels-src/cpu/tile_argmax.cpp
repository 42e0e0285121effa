// tile_argmax_row (tile_argmax.h): the scalar scan, and AVX-512 two tiles at
// a time (at m = 8 the scan took about 2% of a decode step: a compare and
// two branches per logit, 1.2 M logits per step).
#include "kernels-src/cpu/tile_argmax.h"

#include <algorithm>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -W(maybe-)uninitialized reports once inlined (as in gemv_lanes.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#define KERN_ARGMAX_X86 1
#else
#define KERN_ARGMAX_X86 0
#endif

#include "common/bf16.h"

namespace kern::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int32_t kNone = std::numeric_limits<int32_t>::max();

/// The scan of one tile: a column wins if greater, or equal with a smaller
/// column (only the first qualifying one, as columns ascend).
void scan_tile(const uint16_t* row, int64_t n, int64_t t, float* val, int32_t* idx) {
  float bv = kNegInf;
  int32_t bi = kNone;
  for (int64_t col = t * kArgmaxTileCols; col < std::min(n, (t + 1) * kArgmaxTileCols); ++col) {
    const float v = bf16_to_f32(row[col]);
    if (v > bv || (v == bv && col < bi)) bv = v, bi = static_cast<int32_t>(col);
  }
  val[t] = bv;
  idx[t] = bi;
}

#if KERN_ARGMAX_X86

/// Tiles t and t + 1 (columns 8t .. 8t + 15, all below n): NaN lanes
/// become -inf and are excluded from the match, the tile max is reduced
/// within each 8-lane half, and the first lane equal to it wins (the scan's
/// choice: the first column holding the greatest value).
__attribute__((target("avx512f"))) void two_tiles_avx512(const uint16_t* row, int64_t t, float* val,
                                                         int32_t* idx) {
  const int64_t col0 = t * kArgmaxTileCols;
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + col0));
  const __m512 v = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  const __m512 vm = _mm512_mask_blend_ps(ordered, _mm512_set1_ps(kNegInf), v);
  __m512 mx = _mm512_max_ps(vm, _mm512_permute_ps(vm, 0xb1));  // pairs
  mx = _mm512_max_ps(mx, _mm512_permute_ps(mx, 0x4e));          // quads
  mx = _mm512_max_ps(mx, _mm512_shuffle_f32x4(mx, mx, 0xb1));   // 128-bit halves of each tile
  const unsigned eq = _mm512_cmp_ps_mask(vm, mx, _CMP_EQ_OQ) & ordered;
  for (int half = 0; half < 2; ++half) {
    const unsigned lanes = (eq >> (8 * half)) & 0xffu;
    if (lanes == 0) {
      val[t + half] = kNegInf;
      idx[t + half] = kNone;
      continue;
    }
    const int64_t col = col0 + 8 * half + __builtin_ctz(lanes);
    val[t + half] = bf16_to_f32(row[col]);
    idx[t + half] = static_cast<int32_t>(col);
  }
}

#endif

}  // namespace

void tile_argmax_row(const uint16_t* row, int64_t n, int64_t t0, int64_t t1, float* val, int32_t* idx, bool simd) {
  int64_t t = t0;
#if KERN_ARGMAX_X86
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (simd && avx512)
    for (; t + 2 <= t1 && (t + 2) * kArgmaxTileCols <= n; t += 2) two_tiles_avx512(row, t, val, idx);
#else
  (void)simd;
#endif
  for (; t < t1; ++t) scan_tile(row, n, t, val, idx);
}

}  // namespace kern::cpu
