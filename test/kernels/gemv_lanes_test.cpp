// GemvLaneDots (kernels-src/cpu/gemv_lanes.h), every path this machine runs
// (portable, AVX2, AVX-512), against an independent scalar statement of the
// CUDA kernel's order (kernels-src/cuda/gemv.cu: lane l of a split takes
// groups gb + l + 32 t, one fmaf per element in order; the warp's xor
// butterfly; splits kept apart), bit for bit, at every m in 1..8 and k with
// and without full 32-group blocks, a partial last group and several splits.
// The data spans 40 binades so that any other order (sequential, pairwise,
// a lane shifted) rounds differently: the test checks that it does.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/bf16.h"
#include "kernels-src/cpu/gemv_lanes.h"
#include "kernels-src/cpu/gemv_packed.h"

using kern::cpu::GemvIsa;
using kern::cpu::GemvLaneDots;

namespace {

/// Values +-2^e * (1 + f), e in [-20, 20): sums of them depend on the order.
float wide_f32(std::mt19937& rng) {
  std::uniform_int_distribution<int> ex(-20, 19);
  std::uniform_real_distribution<float> frac(1.0f, 2.0f);
  const float v = std::ldexp(frac(rng), ex(rng));
  return (rng() & 1) != 0 ? -v : v;
}

/// The CUDA order for one split: 32 lane sums (fmaf per element, groups
/// dealt round robin from gb), then every lane's xor butterfly; lane 0's sum.
float cuda_order_dot(const std::vector<float>& a, const std::vector<uint16_t>& w, int64_t k, int64_t gb,
                     int64_t ge) {
  float lane[32] = {};
  for (int l = 0; l < 32; ++l)
    for (int64_t g = gb + l; g < ge; g += 32)
      for (int64_t x = 8 * g; x < std::min(k, 8 * g + 8); ++x)
        lane[l] = std::fma(a[static_cast<size_t>(x)], kern::bf16_to_f32(w[static_cast<size_t>(x)]), lane[l]);
  for (int o = 16; o > 0; o >>= 1) {
    float next[32];
    for (int l = 0; l < 32; ++l) next[l] = lane[l] + lane[l ^ o];
    std::copy(next, next + 32, lane);
  }
  return lane[0];
}

/// Requires each of `rows` w rows' outputs to be the CUDA order, bit for
/// bit: got[(r splits + s) m + i] (GemvLaneDots's layout) = cuda_order_dot of
/// a row i and w row r over split s's groups (a: m x k, w: rows x k). `what`
/// names the case in a failure. Returns the outputs checked.
int require_cuda_order_rows(const std::vector<float>& got, const std::vector<float>& a,
                            const std::vector<uint16_t>& w, int64_t m, int64_t k, int64_t splits, int64_t rows,
                            const std::string& what) {
  const int64_t groups = (k + 7) / 8, per = (groups + splits - 1) / splits;
  int checked = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<uint16_t> wr(w.begin() + r * k, w.begin() + (r + 1) * k);
    for (int64_t s = 0; s < splits; ++s) {
      const int64_t gb = std::min(groups, s * per), ge = std::min(groups, gb + per);
      for (int64_t i = 0; i < m; ++i) {
        const std::vector<float> row(a.begin() + i * k, a.begin() + (i + 1) * k);
        INFO(what << " w row " << r << " split " << s << " a row " << i);
        REQUIRE(std::bit_cast<uint32_t>(got[static_cast<size_t>((r * splits + s) * m + i)]) ==
                std::bit_cast<uint32_t>(cuda_order_dot(row, wr, k, gb, ge)));
        ++checked;
      }
    }
  }
  return checked;
}

std::vector<GemvIsa> supported_isas() {
  std::vector<GemvIsa> out;
  for (const GemvIsa isa : {GemvIsa::kPortable, GemvIsa::kAvx2, GemvIsa::kAvx512, GemvIsa::kAvx512Bf16})
    if (kern::cpu::gemv_isa_supported(isa)) out.push_back(isa);
  return out;
}

}  // namespace

TEST_CASE("every gemv lane-dot path gives the CUDA kernel's order bit for bit at m = 1..8", "[kernels][gemv]") {
  std::mt19937 rng(271);
  const auto isas = supported_isas();
  INFO("best path here: " << kern::cpu::gemv_isa_name(kern::cpu::gemv_best_isa()));
  REQUIRE(kern::cpu::gemv_isa_supported(kern::cpu::gemv_best_isa()));
  int order_sensitive = 0, checked = 0;
  // k: below one block, exactly one, blocks plus a partial group, blocks plus
  // whole groups, Qwen3 sizes; splits cut blocks unevenly.
  for (const auto& [k, splits] : std::vector<std::tuple<int64_t, int64_t>>{
           {1, 1}, {37, 1}, {256, 1}, {257, 1}, {264, 2}, {1000, 3}, {1024, 1}, {1024, 3}, {2056, 1}, {3072, 5},
           {3075, 2}}) {
    for (int64_t m = 1; m <= 8; ++m) {
      std::vector<float> a(static_cast<size_t>(m * k));
      for (float& x : a) x = kern::round_to_bf16(wide_f32(rng));
      std::vector<uint16_t> w(static_cast<size_t>(k));
      for (uint16_t& x : w) x = kern::f32_to_bf16(wide_f32(rng));
      const int64_t groups = (k + 7) / 8, per = (groups + splits - 1) / splits;
      std::vector<float> want(static_cast<size_t>(splits * m));
      for (int64_t s = 0; s < splits; ++s) {
        const int64_t gb = std::min(groups, s * per), ge = std::min(groups, gb + per);
        for (int64_t i = 0; i < m; ++i) {
          const std::vector<float> row(a.begin() + i * k, a.begin() + (i + 1) * k);
          want[static_cast<size_t>(s * m + i)] = cuda_order_dot(row, w, k, gb, ge);
          if (ge - gb > 32) {  // does a sequential sum round differently?
            float seq = 0.0f;
            for (int64_t x = 8 * gb; x < std::min(k, 8 * ge); ++x)
              seq = std::fma(row[static_cast<size_t>(x)], kern::bf16_to_f32(w[static_cast<size_t>(x)]), seq);
            order_sensitive += seq != want[static_cast<size_t>(s * m + i)];
          }
        }
      }
      for (const GemvIsa isa : isas) {
        const GemvLaneDots dots(a.data(), m, k, splits, isa);
        std::vector<float> got(static_cast<size_t>(splits * m), -1.0f);
        dots.dots(w.data(), 1, got.data());
        for (size_t j = 0; j < got.size(); ++j) {
          INFO(kern::cpu::gemv_isa_name(isa) << " k " << k << " splits " << splits << " m " << m << " split "
                                             << j / m << " row " << j % m);
          REQUIRE(std::bit_cast<uint32_t>(got[j]) == std::bit_cast<uint32_t>(want[j]));
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 0);
  CHECK(order_sensitive > 50);  // the data has teeth: another order would fail
}

TEST_CASE("gemv lane-dot paths give every w row of a launch the CUDA order at m = 1..8", "[kernels][gemv]") {
  // Many w rows in one dots() call (1 to 19, as GemvLaneDots's callers pass
  // up to 32): each row's sums must be its own, whichever path and loop
  // order (the AVX-512 path above m = 4 runs a row's lanes 0..15, then
  // 16..31): no lane sums carried between rows, no row skipped or repeated.
  // a of bf16 values (the decode GEMVs' a: the AVX-512 path above m = 4 then
  // reads them as bf16 pairs), of f32 values that are not bf16 (it falls
  // back to the f32 blocks), and of bf16 rows but the last (one row keeps
  // every row off the pairs). Each layout built both ways: from a written
  // rows, and with the rows written by fill on 2 threads (gemv.cpp's
  // prologue), which must call fill once per row before reading it.
  std::mt19937 rng(272);
  const auto isas = supported_isas();
  int checked = 0;
  enum class AKind { kBf16, kF32, kBf16LastF32 };
  for (const AKind kind : {AKind::kBf16, AKind::kF32, AKind::kBf16LastF32})
  for (const auto& [k, splits] :
       std::vector<std::tuple<int64_t, int64_t>>{{37, 1}, {264, 2}, {1000, 3}, {1024, 1}, {3075, 2}}) {
    for (int64_t m = 1; m <= 8; ++m) {
      constexpr int64_t kRows = 19;
      std::vector<float> a(static_cast<size_t>(m * k));
      for (size_t x = 0; x < a.size(); ++x) {
        const bool f32 = kind == AKind::kF32 || (kind == AKind::kBf16LastF32 && x >= static_cast<size_t>((m - 1) * k));
        a[x] = f32 ? wide_f32(rng) : kern::round_to_bf16(wide_f32(rng));
      }
      std::vector<uint16_t> w(static_cast<size_t>(kRows * k));
      for (uint16_t& x : w) x = kern::f32_to_bf16(wide_f32(rng));
      const char* kind_name = kind == AKind::kBf16 ? " bf16" : kind == AKind::kF32 ? " f32" : " bf16+f32";
      for (const int64_t rows : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{16}, kRows})
      for (const bool filled : {false, true}) {
        for (const GemvIsa isa : isas) {
          std::vector<float> rows_buf(a.size(), std::nanf(""));
          std::vector<int> fills(static_cast<size_t>(m), 0);
          const auto fill = [&](int64_t i) {
            ++fills[static_cast<size_t>(i)];
            std::copy_n(a.begin() + i * k, k, rows_buf.begin() + i * k);
          };
          const GemvLaneDots dots = filled ? GemvLaneDots(rows_buf.data(), m, k, splits, isa, 2, fill)
                                           : GemvLaneDots(a.data(), m, k, splits, isa);
          if (filled) REQUIRE(std::all_of(fills.begin(), fills.end(), [](int n) { return n == 1; }));
          std::vector<float> got(static_cast<size_t>(rows * splits * m), -1.0f);
          dots.dots(w.data(), rows, got.data());
          checked += require_cuda_order_rows(
              got, a, w, m, k, splits, rows,
              std::string(kern::cpu::gemv_isa_name(isa)) + kind_name + " a" + (filled ? " (filled)" : "") + ", k " +
                  std::to_string(k) + " splits " + std::to_string(splits) + " m " + std::to_string(m) + " rows " +
                  std::to_string(rows));
        }
      }
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("gemv lane-dot paths report what they run on", "[kernels][gemv]") {
  CHECK(kern::cpu::gemv_isa_supported(GemvIsa::kPortable));
  CHECK(std::string(kern::cpu::gemv_isa_name(GemvIsa::kPortable)) == "portable");
  CHECK(std::string(kern::cpu::gemv_isa_name(GemvIsa::kAvx2)) == "avx2");
  CHECK(std::string(kern::cpu::gemv_isa_name(GemvIsa::kAvx512)) == "avx512");
  CHECK(std::string(kern::cpu::gemv_isa_name(GemvIsa::kAvx512Bf16)) == "avx512-bf16");
#if defined(__x86_64__)
  // Where cpuid has AVX512_BF16, vdpbf16ps is the SDM's two fmas, so the
  // per-process check must pass: a broken check would drop the path unseen.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("fma"))
    CHECK(kern::cpu::gemv_isa_supported(GemvIsa::kAvx512Bf16));
#endif
  // An unsupported path falls back to the portable one and still gives the order.
  std::vector<float> a(40, 1.5f);
  std::vector<uint16_t> w(40, kern::f32_to_bf16(0.25f));
  for (const GemvIsa isa : {GemvIsa::kAvx2, GemvIsa::kAvx512, GemvIsa::kAvx512Bf16}) {
    const GemvLaneDots dots(a.data(), 1, 40, 1, isa);
    float out = 0.0f;
    dots.dots(w.data(), 1, &out);
    CHECK(out == 15.0f);
  }
}

TEST_CASE("the AVX512_BF16 lane dots keep the fma bits where vdpbf16ps would flush denormals", "[kernels][gemv]") {
  // vdpbf16ps reads denormal inputs as zero and flushes denormal results
  // (gemv_lanes.cpp, dp_exact): data where either would change a sum must
  // take the fma path. The first four kinds make every sum depend on what the
  // flush would drop (without the check the avx512-bf16 path fails each);
  // products from 2^126 take the fma path too (every sum here overflows to
  // +inf); large and ordinary products stay in range, where vdpbf16ps runs
  // and must agree.
  std::mt19937 rng(273);
  enum class Kind { kWDenormal, kADenormal, kTinyProducts, kOneTinyRow, kFrom2To126, kLarge, kInRange };
  const auto scaled = [&](int lo, int hi) {
    std::uniform_int_distribution<int> ex(lo, hi);
    std::uniform_real_distribution<float> frac(1.0f, 2.0f);
    const float v = std::ldexp(frac(rng), ex(rng));
    return (rng() & 1) != 0 ? -v : v;
  };
  int checked = 0;
  for (const Kind kind : {Kind::kWDenormal, Kind::kADenormal, Kind::kTinyProducts, Kind::kOneTinyRow,
                          Kind::kFrom2To126, Kind::kLarge, Kind::kInRange})
    for (const auto& [k, splits] : std::vector<std::tuple<int64_t, int64_t>>{{1024, 1}, {3075, 2}, {2048, 3}})
      for (int64_t m = 1; m <= 8; ++m) {  // the avx512-bf16 path's m (m = 1: the packed w's only)
        constexpr int64_t kRows = 5;
        std::vector<float> a(static_cast<size_t>(m * k));
        std::vector<uint16_t> w(static_cast<size_t>(kRows * k));
        for (size_t x = 0; x < a.size(); ++x) {
          float v = scaled(-8, 8);
          if (kind == Kind::kADenormal) v = std::ldexp(scaled(0, 0), -130);  // below 2^-126
          if (kind == Kind::kTinyProducts) v = std::ldexp(v, -60);
          if (kind == Kind::kOneTinyRow && x / static_cast<size_t>(k) == static_cast<size_t>(m / 2))
            v = std::ldexp(v, -70);
          if (kind == Kind::kFrom2To126) v = std::ldexp(scaled(0, 0), 63);  // a * w in [2^125, 2^127)
          if (kind == Kind::kLarge) v = std::ldexp(v, 45);                   // a * w below 2^108
          a[x] = kern::round_to_bf16(v);
        }
        for (size_t x = 0; x < w.size(); ++x) {
          float v = scaled(-8, 8);
          if (kind == Kind::kWDenormal) v = std::ldexp(std::fabs(scaled(0, 0)), -131);  // positive: no sum is 0
          if (kind == Kind::kADenormal) v = std::ldexp(v, 40);
          if (kind == Kind::kTinyProducts || kind == Kind::kOneTinyRow) v = std::ldexp(v, -70);
          if (kind == Kind::kWDenormal && x % 7 != 0) v = 0.0f;  // zeros beside the denormals
          if (kind == Kind::kFrom2To126) v = std::ldexp(1.0f, 62);
          if (kind == Kind::kLarge) v = std::ldexp(v, 45);
          w[x] = kern::f32_to_bf16(v);
        }
        if (kind == Kind::kWDenormal) a.assign(a.size(), kern::round_to_bf16(std::ldexp(1.5f, 60)));
        if (kind == Kind::kFrom2To126)
          for (float& x : a) x = std::fabs(x);
        const int64_t groups = (k + 7) / 8, per = (groups + splits - 1) / splits;
        for (const GemvIsa isa : supported_isas()) {
          const GemvLaneDots dots(a.data(), m, k, splits, isa);
          // Row-major w, and (k a multiple of 8) the packed w, whose range
          // check is made once per call from the packed matrix's magnitudes.
          const bool packable = kern::cpu::gemv_packable(kRows, k, splits);
          for (const bool packed : {false, true}) {
          if (packed && !packable) continue;
          std::vector<float> got(static_cast<size_t>(kRows * splits * m), -1.0f);
          if (packed) {
            std::vector<uint16_t> wp(w.size());
            uint16_t w_min1 = 0, w_max = 0;
            kern::cpu::pack_gemv_rows(w.data(), k, splits, 0, kRows, wp.data(), &w_min1, &w_max);
            dots.dots_packed(wp.data(), kRows, got.data(), kRows, w_min1, w_max);
          } else {
            dots.dots(w.data(), kRows, got.data());
          }
          for (int64_t r = 0; r < kRows; ++r) {
            const std::vector<uint16_t> wr(w.begin() + r * k, w.begin() + (r + 1) * k);
            for (int64_t s = 0; s < splits; ++s) {
              const int64_t gb = std::min(groups, s * per), ge = std::min(groups, gb + per);
              for (int64_t i = 0; i < m; ++i) {
                const std::vector<float> row(a.begin() + i * k, a.begin() + (i + 1) * k);
                const float want = cuda_order_dot(row, wr, k, gb, ge);
                INFO(kern::cpu::gemv_isa_name(isa) << (packed ? " packed" : "") << " kind " << static_cast<int>(kind) << " k " << k << " m " << m
                                                   << " w row " << r << " split " << s << " a row " << i << ": want "
                                                   << want);
                if (kind < Kind::kFrom2To126) REQUIRE(want != 0.0f);  // the flush would matter
                if (kind == Kind::kFrom2To126) REQUIRE(want == INFINITY);
                REQUIRE(std::bit_cast<uint32_t>(got[static_cast<size_t>((r * splits + s) * m + i)]) ==
                        std::bit_cast<uint32_t>(want));
                ++checked;
              }
            }
          }
          }
        }
      }
  CHECK(checked > 0);
}

TEST_CASE("gemv lane dots from a packed w give the CUDA order bit for bit on every path at m = 1..8",
          "[kernels][gemv]") {
  // The packed lane order (gemv_packed.h): whole blocks, a split's partial
  // block packed compactly (k = 264 / 2 splits, 2048 / 3: 22 and 20 lanes),
  // several splits, many w rows per call; a of bf16 values (the
  // avx512-bf16 path takes them as pairs, its range check passing) and of f32
  // values (no pairs: the fma path).
  std::mt19937 rng(274);
  int checked = 0;
  for (const bool bf16_a : {true, false})
  for (const auto& [k, splits] : std::vector<std::tuple<int64_t, int64_t>>{
           {8, 1}, {256, 1}, {264, 2}, {1000, 3}, {1024, 1}, {1024, 3}, {2048, 3}, {3072, 5},
           // One split of 8 whole blocks, and of 9 with a partial one (the
           // 1.7B geometry's k = 2048 GEMVs at one split).
           {2048, 1}, {2312, 1}}) {
    constexpr int64_t kRows = 11;
    std::vector<uint16_t> w(static_cast<size_t>(kRows * k)), wp(w.size(), 0xdead);
    for (uint16_t& x : w) x = kern::f32_to_bf16(wide_f32(rng));
    REQUIRE(kern::cpu::gemv_packable(kRows, k, splits));
    uint16_t w_min1 = 0, w_max = 0;
    kern::cpu::pack_gemv_rows(w.data(), k, splits, 0, kRows, wp.data(), &w_min1, &w_max);
    for (int64_t m = 1; m <= 8; ++m) {
      std::vector<float> a(static_cast<size_t>(m * k));
      for (float& x : a) x = bf16_a ? kern::round_to_bf16(wide_f32(rng)) : wide_f32(rng);
      for (const GemvIsa isa : supported_isas()) {
        const GemvLaneDots dots(a.data(), m, k, splits, isa);
        for (const int64_t rows : {int64_t{1}, int64_t{5}, kRows}) {
          std::vector<float> got(static_cast<size_t>(rows * splits * m), -1.0f);
          dots.dots_packed(wp.data(), rows, got.data(), kRows, w_min1, w_max);
          checked += require_cuda_order_rows(
              got, a, w, m, k, splits, rows,
              std::string(kern::cpu::gemv_isa_name(isa)) + (bf16_a ? " bf16" : " f32") + " a, k " + std::to_string(k) +
                  " splits " + std::to_string(splits) + " m " + std::to_string(m) + " rows " + std::to_string(rows));
        }
      }
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("pack_gemv_rows writes the lane order and the magnitude range", "[kernels][gemv]") {
  // k = 264, 2 splits: groups 0..16 (one partial block of 17 lanes) and
  // 17..32 (16 lanes). Element x of w row r holds r * 1000 + x (as bf16 bits).
  constexpr int64_t kK = 264, kRows = 2;
  std::vector<uint16_t> w(static_cast<size_t>(kRows * kK)), wp(w.size(), 0);
  for (size_t x = 0; x < w.size(); ++x) w[x] = static_cast<uint16_t>((x / kK) * 1000 + x % kK);
  uint16_t w_min1 = 0, w_max = 0;
  kern::cpu::pack_gemv_rows(w.data(), kK, 2, 0, kRows, wp.data(), &w_min1, &w_max);
  // Split 0 (groups 0..16, 17 lanes): dword (d, l) at element 2 (17 d + l).
  // Lane 3, d = 1: elements 2 and 3 of group 3 (x = 26, 27); high word 26.
  CHECK(wp[2 * (17 * 1 + 3)] == 27);
  CHECK(wp[2 * (17 * 1 + 3) + 1] == 26);
  // Split 1 starts at group 17 (element 136), 16 lanes: row 1, lane 15, d = 3:
  // group 32's elements 6 and 7 (x = 262, 263).
  CHECK(wp[kK + 136 + 2 * (16 * 3 + 15)] == 1000 + 263);
  CHECK(wp[kK + 136 + 2 * (16 * 3 + 15) + 1] == 1000 + 262);
  // Every element once: the packed row is a permutation of the row.
  for (int64_t r = 0; r < kRows; ++r) {
    std::vector<uint16_t> a(w.begin() + r * kK, w.begin() + (r + 1) * kK), b(wp.begin() + r * kK, wp.begin() + (r + 1) * kK);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);
  }
  // Magnitudes: the smallest nonzero is 1 (element 1 of row 0; element 0 is
  // 0, which leaves the minimum alone), the largest 1263.
  CHECK(w_min1 == 0);
  CHECK(w_max == 1263);
  // The sign bit is not a magnitude; all zeros: none nonzero.
  std::vector<uint16_t> z(8, 0x8000), zp(8);
  kern::cpu::pack_gemv_rows(z.data(), 8, 1, 0, 1, zp.data(), &w_min1, &w_max);
  CHECK(w_min1 == 0xffff);
  CHECK(w_max == 0);
}

TEST_CASE("GemvPackedStore packs a w once per k and splits and finds it by address", "[kernels][gemv]") {
  std::vector<uint16_t> w(static_cast<size_t>(6 * 1024), kern::f32_to_bf16(0.5f));
  kern::cpu::GemvPackedStore store;
  CHECK(store.bytes() == 0);
  auto added = store.add(w.data(), 4, 1024, 1, 2);
  REQUIRE(added.ok());
  CHECK(added.value() == 4 * 1024 * 2);
  CHECK(store.add(w.data(), 4, 1024, 1, 2).value() == 0);  // held: nothing new
  const kern::cpu::PackedGemvW* p = store.find(w.data(), 4, 1024, 1);
  REQUIRE(p != nullptr);
  CHECK(p->rows == 4);
  CHECK(p->w_max == (kern::f32_to_bf16(0.5f) & 0x7fff));
  CHECK(store.find(w.data(), 3, 1024, 1) == p);     // fewer rows: the same copy
  CHECK(store.find(w.data(), 5, 1024, 1) == nullptr);  // more rows than packed
  CHECK(store.find(w.data(), 4, 1024, 2) == nullptr);  // other splits: another order
  CHECK(store.find(w.data() + 1024, 3, 1024, 1) == nullptr);  // another address
  // A longer w at the same address replaces the copy.
  CHECK(store.add(w.data(), 6, 1024, 1, 1).value() == 6 * 1024 * 2);
  CHECK(store.bytes() == 6 * 1024 * 2);
  REQUIRE(store.find(w.data(), 6, 1024, 1) != nullptr);
  // Not packable: k not a multiple of 8 (a partial last group), no rows.
  CHECK_FALSE(kern::cpu::gemv_packable(4, 1020, 1));
  CHECK_FALSE(kern::cpu::gemv_packable(0, 1024, 1));
  CHECK(store.add(w.data(), 4, 1020, 1, 1).value() == 0);
  CHECK(store.find(w.data(), 4, 1020, 1) == nullptr);
}
