// qk_dots (kernels-src/cpu/attention_dots.h): the interleaved q . k dots of
// the decode attention twins give, for every position, the bits of the
// one-at-a-time loop the twins ran before (multiply, then add, in d order),
// whatever the range's length and start (interleaved blocks and the tail,
// whose missing ways repeat its last position: no key outside the range),
// on the AVX2 path and the portable one.
// (An fma in place of the multiply and add gives the same bits: a product
// of two bf16 values is exact in f32; a reversed d order fails this test.)
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "common/bf16.h"
#include "kernels-src/cpu/attention_dots.h"

namespace {

/// The one-at-a-time dot: acc += q[d] * k[d] from 0.0f (no fma: the cpu
/// kernels build with -ffp-contract=off).
float serial_dot(const uint16_t* q, const uint16_t* k, int64_t n) {
  float acc = 0.0f;
  for (int64_t d = 0; d < n; ++d) {
    const float prod = kern::bf16_to_f32(q[d]) * kern::bf16_to_f32(k[d]);
    acc = acc + prod;
  }
  return acc;
}

}  // namespace

TEST_CASE("qk_dots gives each position the one-at-a-time dot's bits", "[kernels][attention]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (const int64_t head_dim : {1, 7, 8, 64, 100, 128}) {
    constexpr int64_t kPositions = 3 * kern::cpu::kQkWays + 5;
    std::vector<uint16_t> q(static_cast<size_t>(head_dim)), keys(static_cast<size_t>(kPositions * head_dim));
    for (auto& x : q) x = kern::f32_to_bf16(dist(rng));
    for (auto& x : keys) x = kern::f32_to_bf16(dist(rng));
    // Positions visited in a scrambled order, as pages scatter slots.
    const auto key = [&](int64_t p) { return keys.data() + ((p * 7) % kPositions) * head_dim; };
    for (const int64_t begin : {int64_t{0}, int64_t{3}}) {
      for (const int64_t end : {begin, begin + 1, begin + kern::cpu::kQkWays, kPositions}) {
        INFO("head_dim " << head_dim << " positions [" << begin << ", " << end << ")");
        for (const bool simd : {true, false}) {
          INFO((simd ? "simd" : "portable"));
          std::vector<float> got(static_cast<size_t>(end - begin) + 1, -1.0f);
          int64_t outside = 0;  // keys asked for outside [begin, end) (the tail's padding must not)
          const auto checked_key = [&](int64_t p) {
            if (p < begin || p >= end) ++outside;
            return key(p);
          };
          kern::cpu::qk_dots(q.data(), head_dim, begin, end, checked_key, got.data(), simd);
          CHECK(outside == 0);
          for (int64_t p = begin; p < end; ++p) {
            const float want = serial_dot(q.data(), key(p), head_dim);
            uint32_t gb = 0, wb = 0;
            std::memcpy(&gb, &got[static_cast<size_t>(p - begin)], 4);
            std::memcpy(&wb, &want, 4);
            CHECK(gb == wb);
          }
          CHECK(got.back() == -1.0f);  // nothing written past end - begin
        }
      }
    }
  }
}
