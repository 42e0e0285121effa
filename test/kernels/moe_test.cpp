// The mixture-of-experts kernels (docs/kernels.md §18) against the formulas
// in double: the router's softmax and top-k (HF Qwen3MoeSparseMoeBlock),
// the expert gate/up SiLU*mul and the weighted down projection into the
// residual. Bounds (kernel_test_util.h): a dot of k terms errs by at most
// (k + 2) u sum |a_i w_i| in f32. Also: only the selected experts' weights
// are read (the others hold NaN), ties go to the lower expert index, a row's
// bits do not depend on the rows beside it, and bad sizes are refused.
#include <algorithm>
#include <numeric>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

struct Router {
  std::vector<float> weights;
  std::vector<int32_t> ids;
};

Router run_router(const std::vector<uint16_t>& x, const std::vector<uint16_t>& w, int rows, int experts, int k,
                  int top_k, bool norm) {
  Router r{std::vector<float>(size_t(rows) * top_k, -7.0f), std::vector<int32_t>(size_t(rows) * top_k, -7)};
  ArgPack a;
  a.add(x.data()).add(w.data()).add(r.weights.data()).add(r.ids.data()).add<int32_t>(rows).add<int32_t>(experts)
      .add<int32_t>(k).add<int32_t>(top_k).add<uint8_t>(norm ? 1 : 0);
  launch_ok("kern_moe_router_bf16", a, rows);
  return r;
}

/// The double-precision dot of bf16 rows and its f32 error bound.
std::pair<double, double> dot_ref(const uint16_t* a, const uint16_t* w, int k) {
  double s = 0, mag = 0;
  for (int i = 0; i < k; ++i) {
    s += bf(a[i]) * bf(w[i]);
    mag += std::abs(bf(a[i]) * bf(w[i]));
  }
  return {s, (k + 2) * kU * mag};
}

}  // namespace

TEST_CASE("moe router: softmax top-k of the router logits, renormalised or not", "[kernels][moe]") {
  std::mt19937 rng(41);
  for (const auto& [rows, experts, k, top_k] :
       std::vector<std::tuple<int, int, int, int>>{{1, 128, 64, 8}, {3, 5, 37, 2}, {2, 6, 16, 1}, {4, 6, 100, 6}}) {
    const auto x = random_bf16(rng, size_t(rows) * k);
    const auto w = random_bf16(rng, size_t(experts) * k);
    for (const bool norm : {false, true}) {
      const Router r = run_router(x, w, rows, experts, k, top_k, norm);
      for (int row = 0; row < rows; ++row) {
        std::vector<double> logit(experts), err(experts);
        for (int e = 0; e < experts; ++e)
          std::tie(logit[e], err[e]) = dot_ref(&x[size_t(row) * k], &w[size_t(e) * k], k);
        const double m = *std::max_element(logit.begin(), logit.end());
        double sum = 0;
        for (double l : logit) sum += std::exp(l - m);
        std::vector<int> order(experts);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logit[a] > logit[b]; });
        double picked = 0;
        for (int j = 0; j < top_k; ++j) picked += std::exp(logit[order[j]] - m) / sum;
        for (int j = 0; j < top_k; ++j) {
          INFO("rows " << rows << " experts " << experts << " top_k " << top_k << " row " << row << " j " << j);
          // A selection is only determined where the logits differ by more than their f32 errors.
          const bool separated = (j == 0 || logit[order[j - 1]] - logit[order[j]] > 2 * (err[order[j - 1]] + err[order[j]])) &&
                                 (j + 1 == experts || logit[order[j]] - logit[order[j + 1]] > 2 * (err[order[j]] + err[order[j + 1]]));
          if (!separated) continue;
          CHECK(r.ids[size_t(row) * top_k + j] == order[j]);
          const double p = std::exp(logit[order[j]] - m) / sum;
          const double want = norm ? p / picked : p;
          CHECK(std::abs(r.weights[size_t(row) * top_k + j] - want) <= 1e-4 * want + 1e-7);
        }
      }
    }
  }
}

TEST_CASE("moe router: equal logits go to the lower expert index, top-1 renormalised weighs 1", "[kernels][moe]") {
  const int experts = 6, k = 8;
  std::vector<uint16_t> x(k, kern::f32_to_bf16(1.0f)), w(size_t(experts) * k, kern::f32_to_bf16(0.0f));
  for (int i = 0; i < k; ++i) w[size_t(4) * k + i] = w[size_t(1) * k + i] = w[size_t(5) * k + i] = kern::f32_to_bf16(0.5f);
  const Router r = run_router(x, w, 1, experts, k, 3, false);
  CHECK(r.ids == std::vector<int32_t>{1, 4, 5});
  CHECK(r.weights[0] == r.weights[1]);
  const Router one = run_router(x, w, 1, experts, k, 1, true);
  CHECK(one.ids == std::vector<int32_t>{1});
  CHECK(one.weights[0] == 1.0f);
}

TEST_CASE("moe gate_up reads only the selected experts and forms silu(g) * u", "[kernels][moe]") {
  std::mt19937 rng(42);
  const int rows = 3, experts = 5, n = 13, k = 70, top_k = 2;
  const auto x = random_bf16(rng, size_t(rows) * k);
  auto w = random_bf16(rng, size_t(experts) * 2 * n * k, -1, 1);
  const std::vector<int32_t> ids = {4, 0, 2, 4, 0, 7};  // expert 1, 3 unused; 7: no such expert (zero row)
  for (const int e : {1, 3}) std::fill_n(w.begin() + size_t(e) * 2 * n * k, size_t(2) * n * k, kPoison);
  std::vector<uint16_t> act(size_t(rows) * top_k * n, kPoison);
  ArgPack a;
  a.add(x.data()).add(w.data()).add(ids.data()).add(act.data()).add<int32_t>(rows).add<int32_t>(experts)
      .add<int32_t>(n).add<int32_t>(k).add<int32_t>(top_k);
  launch_ok("kern_moe_gate_up_bf16", a, (n + 3) / 4, top_k, rows);
  std::vector<double> ref(act.size()), err(act.size());
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < top_k; ++j)
      for (int c = 0; c < n; ++c) {
        const size_t at = (size_t(r) * top_k + j) * n + c;
        const int e = ids[size_t(r) * top_k + j];
        if (e >= experts) continue;  // ref 0, bound 0
        const auto [g, eg] = dot_ref(&x[size_t(r) * k], &w[(size_t(e) * 2 * n + c) * k], k);
        const auto [u, eu] = dot_ref(&x[size_t(r) * k], &w[(size_t(e) * 2 * n + n + c) * k], k);
        const double s = g / (1 + std::exp(-g));
        ref[at] = s * u;
        err[at] = 1.1 * eg * std::abs(u) + (std::abs(s) + 1e-3) * eu + 8 * kU * std::abs(ref[at]);
      }
  check_bf16(act, ref, err);
}

TEST_CASE("moe down adds the weighted experts into the residual, each row alone", "[kernels][moe]") {
  std::mt19937 rng(43);
  const int rows = 3, experts = 6, n = 11, k = 45, top_k = 2;
  const auto act = random_bf16(rng, size_t(rows) * top_k * k);
  auto w = random_bf16(rng, size_t(experts) * n * k, -1, 1);
  std::fill_n(w.begin() + size_t(3) * n * k, size_t(n) * k, kPoison);  // expert 3: chosen by no row
  const std::vector<int32_t> ids = {5, 0, 1, 2, 0, 4};
  const std::vector<float> weights = {0.75f, 0.25f, 0.6f, 0.4f, 0.5f, 0.5f};
  const auto residual0 = random_bf16(rng, size_t(rows) * n, -4, 4);
  auto run = [&](int row0, int count) {
    std::vector<uint16_t> res(residual0.begin() + size_t(row0) * n, residual0.begin() + size_t(row0 + count) * n);
    ArgPack a;
    a.add(&act[size_t(row0) * top_k * k]).add(w.data()).add(&ids[size_t(row0) * top_k])
        .add(&weights[size_t(row0) * top_k]).add(res.data()).add<int32_t>(count).add<int32_t>(experts)
        .add<int32_t>(n).add<int32_t>(k).add<int32_t>(top_k);
    launch_ok("kern_moe_down_bf16", a, (n + 3) / 4, count);
    return res;
  };
  const auto all = run(0, rows);
  std::vector<double> ref(all.size()), err(all.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < n; ++c) {
      double s = bf(residual0[size_t(r) * n + c]), e = 0, mag = std::abs(s);
      for (int j = 0; j < top_k; ++j) {
        const auto [d, ed] = dot_ref(&act[(size_t(r) * top_k + j) * k], &w[(size_t(ids[r * top_k + j]) * n + c) * k], k);
        s += weights[r * top_k + j] * d;
        e += weights[r * top_k + j] * ed;
        mag += std::abs(weights[r * top_k + j] * d);
      }
      ref[size_t(r) * n + c] = s;
      err[size_t(r) * n + c] = e + (top_k + 2) * kU * mag;
    }
  check_bf16(all, ref, err);
  for (int r = 0; r < rows; ++r) {
    const auto alone = run(r, 1);
    INFO("row " << r);
    CHECK(std::equal(alone.begin(), alone.end(), all.begin() + size_t(r) * n));
  }
}

TEST_CASE("moe kernels refuse top_k above the expert count and too many experts", "[kernels][moe]") {
  std::vector<uint16_t> x(8), w(8);
  std::vector<float> tw(8);
  std::vector<int32_t> ids(8);
  ArgPack a;
  a.add(x.data()).add(w.data()).add(tw.data()).add(ids.data()).add<int32_t>(1).add<int32_t>(2).add<int32_t>(4)
      .add<int32_t>(3).add<uint8_t>(0);
  kern::Status s = launch("kern_moe_router_bf16", a, 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "kern_moe_router_bf16: param 5 (experts) is 2; must be >= 3 (top_k experts per row)");
  a.set<int32_t>(5, 1025).set<int32_t>(7, 1);
  s = launch("kern_moe_router_bf16", a, 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("param 5 (experts) is 1025; must be <= 1024") != std::string::npos);
  a.set<int32_t>(5, 2).set<uint8_t>(8, 2);
  s = launch("kern_moe_router_bf16", a, 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("param 8 (norm_topk_prob) is 2") != std::string::npos);
}
