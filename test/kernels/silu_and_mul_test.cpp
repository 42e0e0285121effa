// kern_silu_and_mul_bf16 (docs/kernels.md §6) against the formula in double.
// f32 error bound: silu(g) * u is 4 f32 operations plus expf (< 1 ulp), and
// 1 + exp(-g) has no cancellation, so e = 16 u |ref| (u = 2^-24) is generous.
#include <algorithm>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

TEST_CASE("silu_and_mul multiplies silu of the first half by the second half", "[kernels][silu]") {
  std::mt19937 rng(21);
  for (const auto& [tokens, d] : std::vector<std::pair<int, int>>{{1, 8}, {3, 17}, {7, 256}}) {
    const auto gate_up = random_bf16(rng, static_cast<size_t>(tokens) * 2 * d, -8.0f, 8.0f);
    std::vector<uint16_t> out(static_cast<size_t>(tokens) * d, kPoison);
    ArgPack a;
    a.add(gate_up.data()).add(out.data()).add<int32_t>(tokens).add<int32_t>(d);
    launch_ok("kern_silu_and_mul_bf16", a, tokens);
    std::vector<double> ref(out.size()), err(out.size());
    for (int t = 0; t < tokens; ++t) {
      for (int j = 0; j < d; ++j) {
        const double g = bf(gate_up[t * 2 * d + j]), u = bf(gate_up[t * 2 * d + d + j]);
        ref[t * d + j] = g / (1.0 + std::exp(-g)) * u;
        err[t * d + j] = 16 * kU * std::abs(ref[t * d + j]);
      }
    }
    check_bf16(out, ref, err);
  }
}

TEST_CASE("silu_and_mul reads the gate from the first half of the row", "[kernels][silu]") {
  // gate = 0 -> silu = 0 whatever up is; swapping the halves would give 2 * silu(2).
  const std::vector<uint16_t> gate_up = {kern::f32_to_bf16(0.0f), kern::f32_to_bf16(2.0f)};
  std::vector<uint16_t> out(1, kPoison);
  ArgPack a;
  a.add(gate_up.data()).add(out.data()).add<int32_t>(1).add<int32_t>(1);
  launch_ok("kern_silu_and_mul_bf16", a, 1);
  CHECK(out[0] == kern::f32_to_bf16(0.0f));
}

TEST_CASE("silu_and_mul gives a row the same bits in a prefill-sized launch (rows over the cores) as alone",
          "[kernels][silu]") {
  // 32 x 3072 (Qwen3-0.6B's prefill rows) is large enough to run on every core.
  constexpr int kTokens = 32, kD = 3072;
  std::mt19937 rng(22);
  const auto gate_up = random_bf16(rng, static_cast<size_t>(kTokens) * 2 * kD, -8.0f, 8.0f);
  std::vector<uint16_t> out(static_cast<size_t>(kTokens) * kD, kPoison);
  ArgPack a;
  a.add(gate_up.data()).add(out.data()).add<int32_t>(kTokens).add<int32_t>(kD);
  launch_ok("kern_silu_and_mul_bf16", a, kTokens);
  for (int t : {0, 15, 16, 31}) {
    INFO("row " << t);
    std::vector<uint16_t> alone(kD, kPoison);
    ArgPack b;
    b.add(gate_up.data() + static_cast<size_t>(t) * 2 * kD).add(alone.data()).add<int32_t>(1).add<int32_t>(kD);
    launch_ok("kern_silu_and_mul_bf16", b, 1);
    CHECK(std::equal(alone.begin(), alone.end(), out.begin() + static_cast<ptrdiff_t>(t) * kD));
  }
}
