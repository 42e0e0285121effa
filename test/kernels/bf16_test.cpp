// common/bf16.h: exact widening, round-to-nearest-even narrowing, NaN kept
// as a quiet NaN, IEEE overflow to infinity. The narrowing is checked
// against an independent rule written here in double arithmetic (pick the
// nearer of the two neighbouring bf16 values; on a tie the even one).
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "common/bf16.h"

namespace {

using kern::bf16_to_f32;
using kern::f32_to_bf16;

/// Independent reference for a finite or infinite (not NaN) f32 given by its bits.
uint16_t reference_round(uint32_t bits) {
  const float x = std::bit_cast<float>(bits);
  if (std::isinf(x)) return static_cast<uint16_t>(bits >> 16);
  const uint16_t down = static_cast<uint16_t>(bits >> 16);  // toward zero
  const uint16_t up = static_cast<uint16_t>(down + 1);        // away from zero
  const double lo = std::abs(static_cast<double>(bf16_to_f32(down)));
  // The value after the largest finite bf16 is 2^128 (where +-inf sits).
  const double hi = (up & 0x7fff) == 0x7f80 ? std::ldexp(1.0, 128)
                                            : std::abs(static_cast<double>(bf16_to_f32(up)));
  const double ax = std::abs(static_cast<double>(x));
  if (ax - lo < hi - ax) return down;
  if (ax - lo > hi - ax) return up;
  return (down & 1) == 0 ? down : up;
}

bool is_nan_bits(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x007f) != 0; }

}  // namespace

TEST_CASE("bf16_to_f32 widens exactly by placing the bits in the upper half", "[bf16]") {
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(bf16_to_f32(0xc000) == -2.0f);
  CHECK(bf16_to_f32(0x3f81) == 1.0f + 1.0f / 128.0f);
  CHECK(bf16_to_f32(0x0001) == std::ldexp(1.0f, -133));  // smallest subnormal
  CHECK(bf16_to_f32(0x7f80) == std::numeric_limits<float>::infinity());
  CHECK(std::signbit(bf16_to_f32(0x8000)));
}

TEST_CASE("f32_to_bf16 rounds ties to the even neighbour", "[bf16]") {
  // 1 + 2^-8 lies halfway between 1 (0x3f80, even) and 1 + 2^-7 (0x3f81).
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 0x3f81 (odd) and 0x3f82 (even).
  CHECK(f32_to_bf16(1.0f + 3.0f * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(f32_to_bf16(-1.0f - std::ldexp(1.0f, -8)) == 0xbf80);
  // Just above the tie rounds up, just below rounds down.
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3f81);
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) - std::ldexp(1.0f, -20)) == 0x3f80);
}

TEST_CASE("f32_to_bf16 agrees with nearest-even rounding on every tie and its neighbours", "[bf16]") {
  for (uint32_t hi = 0; hi < 0x10000; ++hi) {
    if (is_nan_bits(static_cast<uint16_t>(hi)) || (hi & 0x7fff) == 0x7f80) continue;
    for (const uint32_t lo : {0x7fffu, 0x8000u, 0x8001u, 0x0001u, 0xffffu}) {
      const uint32_t bits = (hi << 16) | lo;
      if (std::isnan(std::bit_cast<float>(bits))) continue;
      if (f32_to_bf16(std::bit_cast<float>(bits)) != reference_round(bits)) {
        INFO("f32 bits 0x" << std::hex << bits);
        REQUIRE(f32_to_bf16(std::bit_cast<float>(bits)) == reference_round(bits));
      }
    }
  }
}

TEST_CASE("f32_to_bf16 agrees with nearest-even rounding on random floats", "[bf16]") {
  std::mt19937 rng(7);
  for (int n = 0; n < 1000000; ++n) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    if (std::isnan(std::bit_cast<float>(bits))) continue;
    if (f32_to_bf16(std::bit_cast<float>(bits)) != reference_round(bits)) {
      INFO("f32 bits 0x" << std::hex << bits);
      REQUIRE(f32_to_bf16(std::bit_cast<float>(bits)) == reference_round(bits));
    }
  }
}

TEST_CASE("every bf16 value survives a round trip through f32", "[bf16]") {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    if (is_nan_bits(bits)) continue;
    REQUIRE(f32_to_bf16(bf16_to_f32(bits)) == bits);
  }
}

TEST_CASE("f32_to_bf16 keeps NaN a quiet NaN, even when only low payload bits are set", "[bf16]") {
  // A signalling NaN whose payload lives in the dropped half would truncate
  // to +inf; rounding up would carry into the sign for a negative one.
  for (const uint32_t bits : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0xffffffffu, 0x7fbfffffu}) {
    const uint16_t r = f32_to_bf16(std::bit_cast<float>(bits));
    INFO("f32 bits 0x" << std::hex << bits);
    CHECK(is_nan_bits(r));
    CHECK((r & 0x0040) != 0);                 // quiet
    CHECK((r & 0x8000) == ((bits >> 16) & 0x8000));  // sign kept
  }
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("f32_to_bf16 overflows to infinity exactly past the largest bf16 plus half an ulp", "[bf16]") {
  CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(f32_to_bf16(std::bit_cast<float>(0x7f7f7fffu)) == 0x7f7f);  // below the tie
  CHECK(f32_to_bf16(std::bit_cast<float>(0x7f7f8000u)) == 0x7f80);  // tie, odd -> up to inf
  CHECK(f32_to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
}
