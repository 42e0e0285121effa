// Helpers for the cpu reference kernel tests: a kernelParams builder, a
// launch runner that goes through the registry (find_cpu_kernel), seeded
// random bf16 data and the bf16 tolerance check.
//
// Tolerance (bf16 outputs). Every kernel computes an f32 value y32 and stores
// bf16(y32). The tests compute `ref`, the exact value (in double) of the
// documented formula on the same bf16 inputs, and an f32 error bound `e` with
// |y32 - ref| <= e from standard rounding-error analysis (a sum of n f32
// terms errs by at most n * u * sum|terms|, u = 2^-24; each test states its
// e). Rounding to bf16 (8 significant bits) moves y32 by at most half an ulp,
// which is <= 2^-8 * |y32| <= 2^-8 * (|ref| + e). Hence the check
//     |out - ref| <= 2^-8 * (|ref| + e) + e.
// It is about as tight as the output format allows (one half-ulp), so a
// kernel that rounds an intermediate it should not (or skips a documented
// rounding) fails it on random data.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/bf16.h"
#include "kernels-src/cpu/cpu_kernel.h"
#include "test/kernels/arg_pack.h"

namespace kern::cpu::test {

/// Unit roundoff of f32.
inline constexpr double kU = 1.0 / 16777216.0;  // 2^-24

/// bf16 bit pattern of a quiet NaN, used to poison memory a kernel must not
/// read (a read turns the result into NaN) or must not write (checked bitwise).
inline constexpr uint16_t kPoison = 0x7fc1;

/// f32 quiet NaN: fills partial-result buffers a kernel must overwrite.
inline constexpr float kNanF = std::numeric_limits<float>::quiet_NaN();

/// RMSNorm's epsilon in the kernel tests (Qwen3's rms_norm_eps).
inline constexpr float kEps = 1e-6f;

/// The decode attention kernels' split count (grid y) in their tests: the
/// partial outputs hold kSplits rows per head.
inline constexpr int kSplits = 16;

/// Runs the kernel registered for `symbol` with `args` and the given geometry.
inline Status launch(std::string_view symbol, const ArgPack& args, uint32_t gx, uint32_t gy = 1,
                     uint32_t gz = 1, uint32_t bx = 128) {
  const CpuKernel* k = find_cpu_kernel(symbol);
  REQUIRE(k != nullptr);
  CpuLaunch l;
  l.grid[0] = gx;
  l.grid[1] = gy;
  l.grid[2] = gz;
  l.block[0] = bx;
  l.args = args.data();
  l.num_args = args.size();
  return k->run(l);
}

/// Like launch() but REQUIREs success, printing the error otherwise.
inline void launch_ok(std::string_view symbol, const ArgPack& args, uint32_t gx, uint32_t gy = 1,
                      uint32_t gz = 1, uint32_t bx = 128) {
  const Status s = launch(symbol, args, gx, gy, gz, bx);
  INFO((s.ok() ? std::string() : s.error().message));
  REQUIRE(s.ok());
}

/// `n` bf16 values drawn uniformly from [lo, hi) and rounded to bf16.
inline std::vector<uint16_t> random_bf16(std::mt19937& rng, size_t n, float lo = -2.0f,
                                         float hi = 2.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = f32_to_bf16(dist(rng));
  return v;
}

/// The bf16 value of `bits` as a double.
inline double bf(uint16_t bits) { return static_cast<double>(bf16_to_f32(bits)); }

/// Rounds a double to the nearest bf16 value (ties to even), for values in
/// bf16's normal range; written independently of common/bf16.h (frexp puts
/// the 8 significant bits above the binary point, nearbyint rounds them in
/// the default nearest-even mode).
inline double round_bf16_ref(double x) {
  if (x == 0.0) return x;
  int e = 0;
  std::frexp(x, &e);
  return std::ldexp(std::nearbyint(std::ldexp(x, 8 - e)), e - 8);
}

/// True when bf16 output `out` is within the header's bound of `ref` given
/// the f32 error bound `e`.
inline bool bf16_close(uint16_t out, double ref, double e) {
  const double o = bf(out);
  return std::abs(o - ref) <= std::ldexp(std::abs(ref) + e, -8) + e;
}

/// Checks every element of `out` against `ref` with per-element bounds `err`
/// (same sizes); reports the first mismatch.
inline void check_bf16(const std::vector<uint16_t>& out, const std::vector<double>& ref,
                       const std::vector<double>& err) {
  REQUIRE(out.size() == ref.size());
  REQUIRE(err.size() == ref.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!bf16_close(out[i], ref[i], err[i])) {
      INFO("element " << i << ": got " << bf(out[i]) << ", reference " << ref[i] << ", f32 bound "
                      << err[i]);
      REQUIRE(bf16_close(out[i], ref[i], err[i]));
    }
  }
}

}  // namespace kern::cpu::test
