// The q . k dots of the decode attention twins (attention_decode_batch.cpp,
// paged_attention.cpp): each position's dot accumulates q[d] * k[d] in d
// order, one f32 multiply then one add per element, as the twins always
// have. One dot's adds form a chain (about four cycles each), so
// kQkWays positions run interleaved: their chains overlap and each
// position's bits stay those of the one-at-a-time loop.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KERN_QK_X86 1
#else
#define KERN_QK_X86 0
#endif

#include "common/bf16.h"

namespace kern::cpu {

/// Positions whose dots run interleaved in qk_dots.
inline constexpr int kQkWays = 8;

namespace detail {

/// The kQkWays keys of the group at p: a last group's missing ways repeat
/// its last position (computed, never stored), so a tail runs interleaved
/// too (one at a time, each tail position was a serial chain: most of a
/// short context's attention time, perf on a batch-8 decode step).
template <typename KeyFn>
[[gnu::always_inline]] inline int64_t
qk_group_keys(int64_t p, int64_t end, KeyFn &key,
              const uint16_t *(&k)[kQkWays]) {
  const int64_t count = std::min<int64_t>(kQkWays, end - p);
  for (int j = 0; j < kQkWays; ++j)
    k[j] = key(p + std::min<int64_t>(j, count - 1));
  return count;
}

/// Continues the kQkWays sums acc[j] with elements [d0, head_dim), one at a
/// time in d order.
[[gnu::always_inline]] inline void
qk_scalar_tail(const uint16_t *q, int64_t d0, int64_t head_dim,
               const uint16_t *const (&k)[kQkWays], float *acc) {
  for (int64_t d = d0; d < head_dim; ++d) {
    const float qd = bf16_to_f32(q[d]);
    for (int j = 0; j < kQkWays; ++j)
      acc[j] += qd * bf16_to_f32(k[j][d]);
  }
}

#if KERN_QK_X86

/// 8 bf16 values at p, widened to f32.
[[gnu::always_inline]] inline __attribute__((target("avx2"))) __m256
qk_widen8(const uint16_t *p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/// r[e] lane j = r[j] lane e (8 x 8 floats).
[[gnu::always_inline]] inline __attribute__((target("avx2"))) void
qk_transpose8(__m256 (&r)[8]) {
  __m256 t[8], s[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) { // rows 4h .. 4h + 3
    s[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    s[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xee);
    s[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    s[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
  }
}

/// qk_dots on AVX2, the same bits: lane j of one ymm holds position j's
/// sum; per 8 elements the 8 products of each key (one vmulps per key, the
/// scalar multiply's rounding) are transposed so that 8 vaddps add element
/// d, d + 1, ... to every position's sum in d order. No fma: the target
/// has none, so nothing can contract the multiply and the add.
template <typename KeyFn>
__attribute__((target("avx2"))) void
qk_dots_avx2(const uint16_t *q, int64_t head_dim, int64_t begin, int64_t end,
             KeyFn &key, float *dots) {
  const int64_t vec_d = head_dim / 8 * 8;
  for (int64_t p = begin; p < end; p += kQkWays) {
    const uint16_t *k[kQkWays];
    const int64_t count = qk_group_keys(p, end, key, k);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t d = 0; d < vec_d; d += 8) {
      const __m256 qv = qk_widen8(q + d);
      __m256 r[8];
      for (int j = 0; j < kQkWays; ++j)
        r[j] = _mm256_mul_ps(qk_widen8(k[j] + d), qv);
      qk_transpose8(r);
      for (int e = 0; e < 8; ++e)
        acc = _mm256_add_ps(acc, r[e]);
    }
    alignas(32) float sums[kQkWays];
    _mm256_store_ps(sums, acc);
    qk_scalar_tail(q, vec_d, head_dim, k, sums);
    for (int64_t j = 0; j < count; ++j)
      dots[p + j - begin] = sums[j];
  }
}

#endif // KERN_QK_X86

} // namespace detail

/// dots[p - begin] = sum over d < head_dim of q[d] * k_p[d] (bf16 widened
/// to f32; multiply, then add, in d order from 0.0f), for p in [begin,
/// end), k_p = key(p) (head_dim bf16 values; key is asked only for p in
/// [begin, end)). `dots` holds end - begin floats. `simd` false runs the
/// portable loop (the test's reference for the AVX2 one: the same bits).
template <typename KeyFn>
void qk_dots(const uint16_t *q, int64_t head_dim, int64_t begin, int64_t end,
             KeyFn &&key, float *dots, bool simd = true) {
#if KERN_QK_X86
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (simd && avx2) {
    detail::qk_dots_avx2(q, head_dim, begin, end, key, dots);
    return;
  }
#endif
  for (int64_t p = begin; p < end; p += kQkWays) {
    const uint16_t *k[kQkWays];
    const int64_t count = detail::qk_group_keys(p, end, key, k);
    float acc[kQkWays] = {};
    detail::qk_scalar_tail(q, 0, head_dim, k, acc);
    for (int64_t j = 0; j < count; ++j)
      dots[p + j - begin] = acc[j];
  }
}

} // namespace kern::cpu
