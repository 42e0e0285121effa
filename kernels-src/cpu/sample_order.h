// The pieces of kern_sample_bf16 (docs/kernels.md §17) that fix its order
// of operations and its random numbers, for the cpu twin (sample.cpp) and
// its tests. kernels-src/cuda/sample.cu writes the same steps in device
// code; both must change together.
#pragma once

#include <Random123/philox.h>

#include <bit>
#include <cmath>
#include <cstdint>

namespace kern::cpu::sample_order {

/// Keys of a bf16 logit: its 16 bits mapped so that a larger value has a larger key.
inline constexpr int32_t kKeys = 65536;
/// Threads of the CUDA block; thread j scans keys [j kKeysPerThread, (j + 1) kKeysPerThread) from the top.
inline constexpr int kThreads = 256;
inline constexpr int kKeysPerThread = kKeys / kThreads;

/// The order-preserving key of bf16 bits (-0 counts as +0), or -1 for a NaN.
inline int32_t key_of(uint16_t bits) {
  if ((bits & 0x7fffu) > 0x7f80u) return -1;
  if (bits == 0x8000u) bits = 0;
  return (bits & 0x8000u) ? static_cast<int32_t>(~bits & 0xffffu) : static_cast<int32_t>(bits | 0x8000u);
}

/// The logit a key stands for (inverse of key_of).
inline float value_of(int32_t key) {
  const uint32_t k = static_cast<uint32_t>(key);
  const uint32_t bits = (k & 0x8000u) ? (k & 0x7fffu) : (~k & 0xffffu);
  return std::bit_cast<float>(bits << 16);
}

/// The q-th key from the top (the scan order).
inline int32_t key_at(int32_t q) { return kKeys - 1 - q; }

/// min_p as the kernel uses it: NaN or <= 0 -> 0 (off), > 1 -> 1.
inline float clamp_min_p(float min_p) { return min_p > 0.0f ? (min_p < 1.0f ? min_p : 1.0f) : 0.0f; }

/// The probability mass of a key (unnormalised): count x expf((v - vmax) / t),
/// 0 when the key is cut by top_k (`kept_by_top_k` false) or by min_p
/// (w < mp, mp > 0). The product is rounded once (the CUDA twin uses
/// __fmul_rn so that it is never fused into the following sum).
inline float key_mass(int32_t count, float v, float vmax, float t, bool kept_by_top_k, float mp) {
  if (count == 0 || !kept_by_top_k) return 0.0f;
  const float w = std::exp((v - vmax) / t);
  if (mp > 0.0f && !(w >= mp)) return 0.0f;
  return static_cast<float>(count) * w;
}

/// The cumulative mass top_p must reach: top_p x total for top_p < 1 (at
/// least 1, the top key's mass, so that it is always kept), else the total.
inline float top_p_target(float top_p, float total) {
  if (!(top_p < 1.0f)) return total;
  const float x = top_p * total;
  return x > 1.0f ? x : 1.0f;
}

/// The two random numbers of one sampled token.
struct Draw {
  float u;        ///< uniform in [0, 1), 24 bits
  uint64_t pick;  ///< picks one of a key's tied ids (pick mod count)
};

/// Philox4x32-10 (Random123) with key (seed lo, seed hi) and counter
/// (position lo, position hi, 0, 0): the same (seed, position) always draws
/// the same numbers, whatever else runs.
inline Draw draw(uint64_t seed, int64_t position) {
  const uint64_t p = static_cast<uint64_t>(position);
  r123::Philox4x32 g;
  const r123::Philox4x32::ctr_type c = {{static_cast<uint32_t>(p), static_cast<uint32_t>(p >> 32), 0u, 0u}};
  const r123::Philox4x32::key_type k = {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  const r123::Philox4x32::ctr_type r = g(c, k);
  return {static_cast<float>(r[0] >> 8) * 0x1p-24f, (static_cast<uint64_t>(r[1]) << 32) | r[2]};
}

}  // namespace kern::cpu::sample_order
