// tile_argmax_row (kernels-src/cpu/tile_argmax.h): the AVX-512 path and the
// scalar scan give every tile the same (value bits, column), and both match
// an independent reference (the first column of the greatest non-NaN value)
// on rows full of ties, NaNs, infinities and signed zeros, for any first
// tile and any n, reading nothing at or past column n.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "common/bf16.h"
#include "kernels-src/cpu/tile_argmax.h"

namespace {

uint32_t bits_of(float x) {
  uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// A logit drawn from a small set, so ties are common: NaNs of both signs
/// and two payloads, +-inf, +-0 and a few finite values.
uint16_t draw(std::mt19937& rng) {
  static const uint16_t kValues[] = {0x7fc0, 0xffc0, 0x7f81, 0xff80, 0x7f80, 0x0000, 0x8000,
                                     0x3f80, 0xbf80, 0x4000, 0x4000, 0x3f80, 0x0001, 0x8001};
  return kValues[std::uniform_int_distribution<size_t>(0, std::size(kValues) - 1)(rng)];
}

}  // namespace

TEST_CASE("tile argmax: the AVX-512 path and the scan agree with the reference on every tile",
          "[kernels][argmax]") {
  std::mt19937 rng(27);
  constexpr int64_t kCols = kern::cpu::kArgmaxTileCols;
  for (const int64_t n : {1, 7, 8, 15, 16, 17, 40, 63, 64, 200}) {
    const int64_t tiles = (n + kCols - 1) / kCols;
    for (int trial = 0; trial < 40; ++trial) {
      // Columns at and past n hold +inf: a read past n would win a tile.
      std::vector<uint16_t> row(static_cast<size_t>(tiles * kCols + 16), 0x7f80);
      for (int64_t c = 0; c < n; ++c) row[static_cast<size_t>(c)] = draw(rng);
      if (trial % 4 == 0)  // a tile of NaNs only, and one of -inf only
        for (int64_t c = 0; c < std::min<int64_t>(n, kCols); ++c) row[static_cast<size_t>(c)] = 0x7fc0;
      if (trial % 4 == 1)
        for (int64_t c = kCols; c < std::min<int64_t>(n, 2 * kCols); ++c) row[static_cast<size_t>(c)] = 0xff80;
      for (const int64_t t0 : {int64_t{0}, int64_t{1}}) {
        if (t0 >= tiles) continue;
        for (const bool simd : {true, false}) {
          INFO("n " << n << " trial " << trial << " first tile " << t0 << (simd ? " simd" : " scan"));
          std::vector<float> val(static_cast<size_t>(tiles), 123.0f);
          std::vector<int32_t> idx(static_cast<size_t>(tiles), -7);
          kern::cpu::tile_argmax_row(row.data(), n, t0, tiles, val.data(), idx.data(), simd);
          for (int64_t t = 0; t < tiles; ++t) {
            INFO("tile " << t);
            if (t < t0) {  // tiles before t0 untouched
              CHECK(idx[static_cast<size_t>(t)] == -7);
              continue;
            }
            int64_t best = -1;
            for (int64_t c = t * kCols; c < std::min(n, (t + 1) * kCols); ++c) {
              const float v = kern::bf16_to_f32(row[static_cast<size_t>(c)]);
              if (std::isnan(v)) continue;
              if (best < 0 || v > kern::bf16_to_f32(row[static_cast<size_t>(best)])) best = c;
            }
            if (best < 0) {
              CHECK(idx[static_cast<size_t>(t)] == std::numeric_limits<int32_t>::max());
              CHECK(val[static_cast<size_t>(t)] == -std::numeric_limits<float>::infinity());
            } else {
              CHECK(idx[static_cast<size_t>(t)] == best);
              CHECK(bits_of(val[static_cast<size_t>(t)]) ==
                    bits_of(kern::bf16_to_f32(row[static_cast<size_t>(best)])));
            }
          }
        }
      }
    }
  }
}
