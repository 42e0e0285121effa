// The RMS-norm family (docs/kernels.md §2-4) against the formulas in double.
// f32 error bound for y = x * rsqrt(mean(x^2) + eps) * w: the squares of
// bf16 values are exact in f32, a sum of n positive terms errs by at most
// n u relatively (halved by the square root), and about 8 further roundings
// follow (mean, + eps, sqrt, reciprocal, two products, bf16 widening is
// exact): e = (n + 16) u |ref| (u = 2^-24).
#include <cmath>
#include <tuple>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

/// y = x / sqrt(mean(x^2) + eps) * w in double, and its f32 error bound.
void rmsnorm_ref(const std::vector<double>& x, const std::vector<uint16_t>& w, double eps,
                 double* y, double* err) {
  const size_t n = x.size();
  double ms = 0.0;
  for (double v : x) ms += v * v;
  ms /= static_cast<double>(n);
  const double inv = 1.0 / std::sqrt(ms + eps);
  for (size_t j = 0; j < n; ++j) {
    y[j] = x[j] * inv * bf(w[j]);
    err[j] = (static_cast<double>(n) + 16) * kU * std::abs(y[j]);
  }
}

}  // namespace

TEST_CASE("rmsnorm scales each row by its reciprocal rms and the weight", "[kernels][rmsnorm]") {
  std::mt19937 rng(31);
  for (const auto& [rows, n] : std::vector<std::pair<int, int>>{{1, 4}, {3, 33}, {5, 1024}}) {
    const auto x = random_bf16(rng, static_cast<size_t>(rows) * n);
    const auto w = random_bf16(rng, n, 0.5f, 1.5f);
    const float eps = 1e-6f;
    std::vector<uint16_t> y(x.size(), kPoison);
    ArgPack a;
    a.add(x.data()).add(w.data()).add(y.data()).add<int32_t>(rows).add<int32_t>(n).add(eps);
    launch_ok("kern_rmsnorm_bf16", a, rows, 1, 1, 256);
    std::vector<double> ref(y.size()), err(y.size());
    for (int r = 0; r < rows; ++r) {
      std::vector<double> row(n);
      for (int j = 0; j < n; ++j) row[j] = bf(x[r * n + j]);
      rmsnorm_ref(row, w, static_cast<double>(eps), &ref[r * n], &err[r * n]);
    }
    check_bf16(y, ref, err);
  }
}

TEST_CASE("rmsnorm adds eps inside the square root", "[kernels][rmsnorm]") {
  // A row of zeros but one tiny value: eps dominates mean(x^2).
  const std::vector<uint16_t> x = {kern::f32_to_bf16(1e-3f), 0, 0, 0};
  const std::vector<uint16_t> w(4, kern::f32_to_bf16(1.0f));
  std::vector<uint16_t> y(4, kPoison);
  ArgPack a;
  a.add(x.data()).add(w.data()).add(y.data()).add<int32_t>(1).add<int32_t>(4).add(0.01f);
  launch_ok("kern_rmsnorm_bf16", a, 1);
  const double xv = bf(x[0]);
  const double ref = xv / std::sqrt(xv * xv / 4 + 0.01);  // ~0.01, not ~2 as without eps
  CHECK(bf16_close(y[0], ref, 32 * kU * ref));
  CHECK(y[1] == 0);
}

TEST_CASE("add_rmsnorm stores the rounded sum in residual and normalises it", "[kernels][rmsnorm]") {
  std::mt19937 rng(32);
  for (const auto& [rows, n] : std::vector<std::pair<int, int>>{{1, 8}, {4, 100}, {3, 2048}}) {
    const auto x = random_bf16(rng, static_cast<size_t>(rows) * n, -0.5f, 0.5f);
    auto residual = random_bf16(rng, x.size(), -4.0f, 4.0f);
    const auto residual_in = residual;
    const auto w = random_bf16(rng, n, 0.5f, 1.5f);
    const float eps = 1e-5f;
    std::vector<uint16_t> y(x.size(), kPoison);
    ArgPack a;
    a.add(x.data()).add(residual.data()).add(w.data()).add(y.data());
    a.add<int32_t>(rows).add<int32_t>(n).add(eps);
    launch_ok("kern_add_rmsnorm_bf16", a, rows, 1, 1, 256);
    std::vector<double> ref(y.size()), err(y.size());
    for (int r = 0; r < rows; ++r) {
      std::vector<double> row(n);
      for (int j = 0; j < n; ++j) {
        const size_t i = static_cast<size_t>(r) * n + j;
        row[j] = round_bf16_ref(bf(residual_in[i]) + bf(x[i]));
        INFO("row " << r << " element " << j);
        REQUIRE(bf(residual[i]) == row[j]);
      }
      rmsnorm_ref(row, w, static_cast<double>(eps), &ref[r * n], &err[r * n]);
    }
    check_bf16(y, ref, err);
  }
}

TEST_CASE("add_rmsnorm normalises the rounded residual, not the exact sum", "[kernels][rmsnorm]") {
  // Found by search: the rms of the exact sum and of its bf16 rounding give
  // different bf16 outputs, each far (>= 0.3 ulp) from a rounding tie.
  const std::vector<double> res = {1.03125, -6.78125};
  const std::vector<double> xs = {-0.01129150390625, -0.01177978515625};
  std::vector<uint16_t> x(2), residual(2);
  for (int j = 0; j < 2; ++j) {
    x[j] = kern::f32_to_bf16(static_cast<float>(xs[j]));
    residual[j] = kern::f32_to_bf16(static_cast<float>(res[j]));
    REQUIRE(bf(x[j]) == xs[j]);
    REQUIRE(bf(residual[j]) == res[j]);
  }
  const std::vector<uint16_t> w(2, kern::f32_to_bf16(1.0f));
  std::vector<uint16_t> y(2, kPoison);
  ArgPack a;
  a.add(x.data()).add(residual.data()).add(w.data()).add(y.data());
  a.add<int32_t>(1).add<int32_t>(2).add(1e-6f);
  launch_ok("kern_add_rmsnorm_bf16", a, 1);
  const auto norm = [](std::vector<double> r) {
    const double inv = 1.0 / std::sqrt((r[0] * r[0] + r[1] * r[1]) / 2 + 1e-6);
    return std::vector<double>{r[0] * inv, r[1] * inv};
  };
  const auto y_rounded = norm({round_bf16_ref(res[0] + xs[0]), round_bf16_ref(res[1] + xs[1])});
  const auto y_exact = norm({res[0] + xs[0], res[1] + xs[1]});
  bool discriminates = false;
  for (int j = 0; j < 2; ++j) {
    CHECK(bf(y[j]) == round_bf16_ref(y_rounded[j]));
    discriminates |= round_bf16_ref(y_rounded[j]) != round_bf16_ref(y_exact[j]);
  }
  CHECK(discriminates);
}

TEST_CASE("head_rmsnorm normalises each head of strided token rows", "[kernels][rmsnorm]") {
  std::mt19937 rng(33);
  // Like the q_norm of a fused qkv row: heads 4, head_dim 16, x_stride
  // (4 + 2 * 2) * 16; y rows padded by 8 elements that must stay untouched.
  for (const auto& [tokens, heads, dim] :
       std::vector<std::tuple<int, int, int>>{{1, 4, 16}, {3, 4, 16}, {5, 2, 128}}) {
    const int x_stride = (heads + 4) * dim, y_stride = heads * dim + 8;
    const auto x = random_bf16(rng, static_cast<size_t>(tokens) * x_stride);
    const auto w = random_bf16(rng, dim, 0.5f, 1.5f);
    std::vector<uint16_t> y(static_cast<size_t>(tokens) * y_stride, kPoison);
    const int total = tokens * heads;
    const float eps = 1e-6f;
    ArgPack a;
    a.add(x.data()).add(w.data()).add(y.data()).add<int32_t>(total).add<int32_t>(heads);
    a.add<int32_t>(dim).add<int32_t>(x_stride).add<int32_t>(y_stride).add(eps);
    launch_ok("kern_head_rmsnorm_bf16", a, (total + 3) / 4, 1, 1, 128);
    std::vector<uint16_t> out;
    std::vector<double> ref, err;
    for (int t = 0; t < tokens; ++t) {
      for (int h = 0; h < heads; ++h) {
        std::vector<double> head(dim), r(dim), e(dim);
        for (int d = 0; d < dim; ++d) head[d] = bf(x[t * x_stride + h * dim + d]);
        rmsnorm_ref(head, w, static_cast<double>(eps), r.data(), e.data());
        for (int d = 0; d < dim; ++d) out.push_back(y[t * y_stride + h * dim + d]);
        ref.insert(ref.end(), r.begin(), r.end());
        err.insert(err.end(), e.begin(), e.end());
      }
      for (int p = heads * dim; p < y_stride; ++p) REQUIRE(y[t * y_stride + p] == kPoison);
    }
    check_bf16(out, ref, err);
  }
}
