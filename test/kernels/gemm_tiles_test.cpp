// GemmTiles (kernels-src/cpu/gemm_tiles.h), every path this machine runs
// (portable, AVX2, AVX-512 BF16), against an independent scalar statement of
// the documented order (16 lanes, lane L of chunk q taking elements
// 32q + 2L + 1 then 32q + 2L by fma, zeros past k, then the halving sum),
// bit for bit, at shapes with partial chunks, tiles and thread ranges, on
// data spanning 40 binades; a constructed row shows the lane order apart
// from the k order. Denormal and tiny values make
// vdpbf16ps's flushing able to act: its path must then fall back to the
// fmas' bits.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "common/bf16.h"
#include "kernels-src/cpu/gemm_tiles.h"

using kern::cpu::GemmProblem;
using kern::cpu::GemmTiles;
using kern::cpu::GemvIsa;

namespace {

/// bf16 bits of +-2^e * (1 + f), e in [lo, lo + 40).
uint16_t wide_bf16(std::mt19937& rng, int lo = -20) {
  std::uniform_int_distribution<int> ex(lo, lo + 39);
  std::uniform_real_distribution<float> frac(1.0f, 2.0f);
  const float v = std::ldexp(frac(rng), ex(rng));
  return kern::f32_to_bf16((rng() & 1) != 0 ? -v : v);
}

constexpr uint16_t kPoisonBits = 0x7fc1;  // a NaN: a c never written shows

float f(uint16_t x) { return kern::bf16_to_f32(x); }

/// The documented order for one (a row, w row), from the definition.
float documented_dot(const uint16_t* a, const uint16_t* w, int64_t k) {
  float lane[16] = {};
  for (int64_t q = 0; q * 32 < k; ++q) {
    for (int l = 0; l < 16; ++l) {
      const int64_t e = 32 * q + 2 * l;
      if (e + 1 < k) lane[l] = std::fma(f(a[e + 1]), f(w[e + 1]), lane[l]);
      if (e < k) lane[l] = std::fma(f(a[e]), f(w[e]), lane[l]);
    }
  }
  for (int l = 0; l < 8; ++l) lane[l] += lane[l + 8];
  for (int l = 0; l < 4; ++l) lane[l] += lane[l + 4];
  return (lane[0] + lane[2]) + (lane[1] + lane[3]);
}

std::vector<GemvIsa> paths() {
  std::vector<GemvIsa> out;
  for (GemvIsa isa : {GemvIsa::kPortable, GemvIsa::kAvx2, GemvIsa::kAvx512Bf16})
    if (kern::cpu::gemv_isa_supported(isa)) out.push_back(isa);
  return out;
}

/// c from `isa`, computed in column ranges of `step` (as threads would).
std::vector<uint16_t> run(const std::vector<uint16_t>& a, const std::vector<uint16_t>& w, std::vector<uint16_t> c,
                          int64_t m, int64_t n, int64_t k, bool acc, GemvIsa isa, int64_t step) {
  const GemmTiles tiles(GemmProblem{a.data(), w.data(), c.data(), m, n, k, acc}, isa);
  for (int64_t j = 0; j < n; j += step) tiles.columns(j, std::min(n, j + step));
  return c;
}

}  // namespace

TEST_CASE("gemm tiles: every path gives the documented order's bits", "[kernels][gemm]") {
  std::mt19937 rng(461);
  for (const auto& [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {1, 5, 31}, {3, 7, 32}, {5, 9, 33}, {4, 4, 64}, {7, 13, 100}, {9, 6, 1024}, {70, 11, 65}}) {
    std::vector<uint16_t> a(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k)), c0(static_cast<size_t>(m * n));
    for (auto& x : a) x = wide_bf16(rng);
    for (auto& x : w) x = wide_bf16(rng);
    for (auto& x : c0) x = wide_bf16(rng, -2);
    for (const bool acc : {false, true}) {
      std::vector<uint16_t> want(c0.size());
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const float dot = documented_dot(&a[static_cast<size_t>(i * k)], &w[static_cast<size_t>(j * k)], k);
          const size_t o = static_cast<size_t>(i * n + j);
          want[o] = kern::f32_to_bf16(acc ? f(c0[o]) + dot : dot);
        }
      }
      for (const GemvIsa isa : paths()) {
        for (const int64_t step : {n, int64_t{1}, int64_t{5}}) {
          INFO(kern::cpu::gemv_isa_name(isa) << " m " << m << " n " << n << " k " << k << " acc " << acc
                                             << " column step " << step);
          CHECK(run(a, w, c0, m, n, k, acc, isa, step) == want);
        }
      }
    }
  }
}

TEST_CASE("gemm tiles: the lanes are summed in the documented order, not in k order", "[kernels][gemm]") {
  // w = 2^26 (element 0: lane 0), -2^26 (element 2: lane 1), 1 (element 4:
  // lane 2), a = 1: in k order the sum is 1; in the lanes' order, (lane 0 +
  // lane 4) + (lane 2 + lane 6) = 2^26 + 1 rounds to 2^26, then lane 1's
  // -2^26 gives 0.
  const int64_t k = 40;
  std::vector<uint16_t> a(static_cast<size_t>(k), kern::f32_to_bf16(1.0f)), w(static_cast<size_t>(k), 0);
  w[0] = kern::f32_to_bf16(std::ldexp(1.0f, 26));
  w[2] = kern::f32_to_bf16(-std::ldexp(1.0f, 26));
  w[4] = kern::f32_to_bf16(1.0f);
  REQUIRE(documented_dot(a.data(), w.data(), k) == 0.0f);
  for (const GemvIsa isa : paths()) {
    INFO(kern::cpu::gemv_isa_name(isa));
    CHECK(run(a, w, {kPoisonBits}, 1, 1, k, false, isa, 1) == std::vector<uint16_t>{0});
  }
}

TEST_CASE("gemm tiles: a row's bits do not depend on the rows beside it", "[kernels][gemm]") {
  std::mt19937 rng(462);
  const int64_t m = 67, n = 21, k = 160;  // 64-row blocks, 4-row tiles, a last single row
  std::vector<uint16_t> a(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k));
  for (auto& x : a) x = wide_bf16(rng);
  for (auto& x : w) x = wide_bf16(rng);
  for (const GemvIsa isa : paths()) {
    const auto all = run(a, w, std::vector<uint16_t>(static_cast<size_t>(m * n)), m, n, k, false, isa, n);
    for (int64_t i = 0; i < m; ++i) {
      const std::vector<uint16_t> row_a(a.begin() + i * k, a.begin() + (i + 1) * k);
      const auto row = run(row_a, w, std::vector<uint16_t>(static_cast<size_t>(n)), 1, n, k, false, isa, n);
      INFO(kern::cpu::gemv_isa_name(isa) << " row " << i);
      REQUIRE(std::equal(row.begin(), row.end(), all.begin() + i * n));
    }
  }
}

TEST_CASE("gemm tiles: denormal and tiny operands keep the fmas' bits on the vdpbf16ps path", "[kernels][gemm]") {
  std::mt19937 rng(463);
  const int64_t m = 6, n = 10, k = 96;
  std::vector<uint16_t> a(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k));
  for (auto& x : a) x = wide_bf16(rng, -70);  // products down to 2^-140: partial sums can be denormal
  for (auto& x : w) x = wide_bf16(rng, -70);
  a[5] = 0x0003;   // a denormal a value (DAZ would read it as 0)
  w[k + 7] = 0x8001;  // a denormal w value in w row 1
  std::vector<uint16_t> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      want[static_cast<size_t>(i * n + j)] =
          kern::f32_to_bf16(documented_dot(&a[static_cast<size_t>(i * k)], &w[static_cast<size_t>(j * k)], k));
  for (const GemvIsa isa : paths()) {
    INFO(kern::cpu::gemv_isa_name(isa));
    CHECK(run(a, w, std::vector<uint16_t>(want.size()), m, n, k, false, isa, n) == want);
  }
}
