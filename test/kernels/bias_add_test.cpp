// kern_bias_add_bf16 (docs/kernels.md §6a) against the sum in double: the
// f32 sum of two bf16 values is exact (their exponents differ by < 24 bits
// or the smaller is below the larger's rounding), so the result is the
// double sum rounded once to bf16; padding past n in a strided row is left
// alone; a short ld is refused.
#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

TEST_CASE("bias_add adds the bias to each row in place, one rounding, padding untouched", "[kernels][bias_add]") {
  std::mt19937 rng(41);
  for (const auto& [rows, n, ld] : std::vector<std::tuple<int, int, int>>{{1, 8, 8}, {3, 17, 20}, {5, 96, 100}}) {
    const auto x0 = random_bf16(rng, static_cast<size_t>(rows) * ld, -4.0f, 4.0f);
    const auto bias = random_bf16(rng, static_cast<size_t>(n), -2.0f, 2.0f);
    std::vector<uint16_t> x = x0;
    ArgPack a;
    a.add(x.data()).add(bias.data()).add<int32_t>(rows).add<int32_t>(n).add<int32_t>(ld);
    launch_ok("kern_bias_add_bf16", a, rows);
    for (int r = 0; r < rows; ++r) {
      for (int i = 0; i < ld; ++i) {
        const size_t at = static_cast<size_t>(r) * ld + i;
        INFO("row " << r << " col " << i);
        if (i >= n) {
          CHECK(x[at] == x0[at]);
        } else {
          CHECK(x[at] == kern::f32_to_bf16(static_cast<float>(bf(x0[at]) + bf(bias[i]))));
        }
      }
    }
  }
}

TEST_CASE("bias_add refuses ld < n", "[kernels][bias_add]") {
  std::vector<uint16_t> x(16), bias(8);
  ArgPack a;
  a.add(x.data()).add(bias.data()).add<int32_t>(2).add<int32_t>(8).add<int32_t>(7);
  const kern::Status s = launch("kern_bias_add_bf16", a, 2);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("param 4 (ld) is 7; must be >= 8") != std::string::npos);
}
