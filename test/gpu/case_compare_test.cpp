// The comparison harness's rules (test/gpu/case_compare.h): the bf16
// tolerance of rotated outputs relative to the rotated pair's magnitude (the
// qk_norm_rope_cache neox T=8 case), the plain rule elsewhere, and the
// bit-exact mode the simulated GPU's comparison uses.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "common/bf16.h"
#include "test/gpu/case_compare.h"

namespace kern::gpu_test {
namespace {

std::vector<uint8_t> bf16s(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t b = f32_to_bf16(v[i]);
    std::memcpy(&out[2 * i], &b, 2);
  }
  return out;
}

// One neox head of D = 4: pairs (0, 2) and (1, 3). Element 0 is small after
// the rotation (-0.2461 on the cpu), its partner large (3.0): a one-ulp
// difference of the pair's magnitude (2^-7 at 3.0) moves element 0 by 0.0127,
// far beyond 1e-3 + 2^-6 * 0.2461 = 0.0048 but within 1e-3 + 2^-6 * 3.01 = 0.048.
const std::vector<float> kCpu = {-0.24609375f, 0.25f, 3.0f, 1.0f};
const std::vector<float> kGpu = {-0.2333984375f, 0.25f, 3.0f, 1.0f};

TEST_CASE("a rotated bf16 output is compared relative to its rotated pair's magnitude") {
  CaseBuffer cpu{"q_out", bf16s(kCpu), Compare::kBf16};
  const Mismatch plain = compare(cpu, bf16s(kGpu));
  CHECK(plain.bad == 1);  // the old rule, relative to the element itself
  CHECK(plain.detail.find("q_out[0]") != std::string::npos);
  cpu.pair_row = 4, cpu.pair_dim = 4, cpu.pair_neox = true;
  const Mismatch paired = compare(cpu, bf16s(kGpu));
  CHECK(paired.bad == 0);
  CHECK_FALSE(paired.bit_exact);
  // A difference beyond the pair rule still fails.
  std::vector<float> far = kGpu;
  far[0] = -0.1875f;
  CHECK(compare(cpu, bf16s(far)).bad == 1);
  // gptj pairs (0, 1): element 0's partner is 0.25, so the same error is too large.
  cpu.pair_neox = false;
  CHECK(compare(cpu, bf16s(kGpu)).bad == 1);
}

TEST_CASE("bit-exact mode rejects a difference the tolerance accepts, and accepts equal bytes") {
  CaseBuffer cpu{"y", bf16s({1.0f, 2.0f}), Compare::kBf16};
  const auto near = bf16s({1.0f, 2.015625f});  // one bf16 ulp at 2
  CHECK(compare(cpu, near).bad == 0);
  const Mismatch exact = compare(cpu, near, /*exact=*/true);
  CHECK(exact.bad == 1);
  CHECK(exact.first_bad == 1);
  const Mismatch same = compare(cpu, bf16s({1.0f, 2.0f}), true);
  CHECK(same.bad == 0);
  CHECK(same.bit_exact);
}

}  // namespace
}  // namespace kern::gpu_test
