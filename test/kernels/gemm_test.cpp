// The GEMM built-ins extern:cublaslt_bf16_tn(_acc) (docs/kernels.md §10)
// against the product in double. f32 error bound of a k-term dot product
// (u = 2^-24): e = (k + 2) u sum_x |a_x w_x|, plus u |c| for the
// accumulating variant's extra addition.
#include <tuple>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

void check_gemm(int m, int n, int k, bool acc, std::mt19937& rng) {
  const auto a = random_bf16(rng, static_cast<size_t>(m) * k);
  const auto w = random_bf16(rng, static_cast<size_t>(n) * k);
  auto c = acc ? random_bf16(rng, static_cast<size_t>(m) * n, -8.0f, 8.0f)
               : std::vector<uint16_t>(static_cast<size_t>(m) * n, kPoison);
  const auto c_in = c;
  ArgPack args;
  args.add(a.data()).add(w.data()).add(c.data()).add<int32_t>(m).add<int32_t>(n).add<int32_t>(k);
  launch_ok(acc ? "extern:cublaslt_bf16_tn_acc" : "extern:cublaslt_bf16_tn", args, 1);
  std::vector<double> ref(c.size()), err(c.size());
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double dot = 0.0, mag = 0.0;
      for (int x = 0; x < k; ++x) {
        const double p = bf(a[static_cast<size_t>(i) * k + x]) * bf(w[static_cast<size_t>(j) * k + x]);
        dot += p;
        mag += std::abs(p);
      }
      const size_t o = static_cast<size_t>(i) * n + j;
      const double old = acc ? bf(c_in[o]) : 0.0;
      ref[o] = old + dot;
      err[o] = (k + 2) * kU * mag + kU * std::abs(old);
    }
  }
  INFO("m " << m << " n " << n << " k " << k << (acc ? " acc" : ""));
  check_bf16(c, ref, err);
}

}  // namespace

TEST_CASE("gemm computes a times w transposed with f32 accumulation", "[kernels][gemm]") {
  std::mt19937 rng(81);
  // Odd sizes exercise the 4-row w panels and the 8-lane tails; the last
  // shape (m n k = 4.2e6) runs on several threads.
  for (const auto& [m, n, k] : std::vector<std::tuple<int, int, int>>{
           {1, 1, 1}, {1, 8, 16}, {3, 5, 7}, {17, 33, 65}, {2, 130, 1000}, {16, 257, 1024}}) {
    check_gemm(m, n, k, false, rng);
  }
}

TEST_CASE("gemm_acc adds the existing c before the single rounding", "[kernels][gemm]") {
  std::mt19937 rng(82);
  for (const auto& [m, n, k] :
       std::vector<std::tuple<int, int, int>>{{1, 4, 9}, {5, 7, 33}, {16, 257, 1024}}) {
    check_gemm(m, n, k, true, rng);
  }
}

TEST_CASE("gemm rounds the accumulated sum once, not the product and the sum separately",
          "[kernels][gemm]") {
  // c = 1, a.w = 2^-8 + 2^-16: one rounding of 1 + 2^-8 + 2^-16 gives
  // 1 + 2^-7; rounding a.w first (to 2^-8) and then 1 + 2^-8 (a tie) gives 1.
  const std::vector<uint16_t> a = {kern::f32_to_bf16(1.0f), kern::f32_to_bf16(1.0f)};
  const std::vector<uint16_t> w = {kern::f32_to_bf16(std::ldexp(1.0f, -8)),
                                   kern::f32_to_bf16(std::ldexp(1.0f, -16))};
  std::vector<uint16_t> c = {kern::f32_to_bf16(1.0f)};
  ArgPack args;
  args.add(a.data()).add(w.data()).add(c.data()).add<int32_t>(1).add<int32_t>(1).add<int32_t>(2);
  launch_ok("extern:cublaslt_bf16_tn_acc", args, 1);
  CHECK(c[0] == kern::f32_to_bf16(1.0f + std::ldexp(1.0f, -7)));
}

TEST_CASE("gemm with k = 0 writes zeros, and its acc variant leaves c unchanged",
          "[kernels][gemm]") {
  std::vector<uint16_t> c(6, kPoison);
  ArgPack args;
  args.add<const uint16_t*>(nullptr).add<const uint16_t*>(nullptr).add(c.data());
  args.add<int32_t>(2).add<int32_t>(3).add<int32_t>(0);
  launch_ok("extern:cublaslt_bf16_tn", args, 1);
  for (const uint16_t x : c) CHECK(x == 0);
  c.assign(6, kern::f32_to_bf16(1.5f));
  launch_ok("extern:cublaslt_bf16_tn_acc", args, 1);
  for (const uint16_t x : c) CHECK(x == kern::f32_to_bf16(1.5f));
}

TEST_CASE("gemm gives a row the same bits whether it runs alone or in a large threaded problem",
          "[kernels][gemm]") {
  // m = 20 tiles as 16 + 4 rows (widened w panels, in 3-row register blocks
  // plus a remainder row) on several threads
  // (m n k = 5.3e6); m = 1 reads w in place on one thread. gemm.cpp promises
  // the same arithmetic per element on both paths, so the bf16 results must
  // be equal. (An indexing slip in either path shows here; a last-bit f32
  // reordering shows only where it crosses a bf16 rounding boundary.)
  std::mt19937 rng(83);
  const int m = 20, n = 257, k = 1027;
  const auto a = random_bf16(rng, static_cast<size_t>(m) * k);
  const auto w = random_bf16(rng, static_cast<size_t>(n) * k);
  std::vector<uint16_t> c(static_cast<size_t>(m) * n);
  ArgPack all;
  all.add(a.data()).add(w.data()).add(c.data()).add<int32_t>(m).add<int32_t>(n).add<int32_t>(k);
  launch_ok("extern:cublaslt_bf16_tn", all, 1);
  for (int i = 0; i < m; ++i) {
    std::vector<uint16_t> row(n);
    ArgPack one;
    one.add(a.data() + static_cast<size_t>(i) * k).add(w.data()).add(row.data());
    one.add<int32_t>(1).add<int32_t>(n).add<int32_t>(k);
    launch_ok("extern:cublaslt_bf16_tn", one, 1);
    for (int j = 0; j < n; ++j) REQUIRE(row[j] == c[static_cast<size_t>(i) * n + j]);
  }
}
