// kern-run compare's span replay measure (compare_measure.h, docs/compare.md
// "The replay measure"): rounding noise against scale errors on synthetic
// regions, the class logic at 1.5 and 0.75 times each threshold, the
// elements a read-and-written region's measure leaves out, the verdict it
// drives, and the near-tie that the free run's own logit error explains.
// Synthetic regions and KLs of fixed size (a 1 % and a 0.3 % scale, noise of
// rel L2 0.015 and 0.05, KL 0.02) pin each constant's value: one loosened
// tenfold fails here.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "common/bf16.h"
#include "kern-run/compare_measure.h"
#include "kern-run/compare_metrics.h"
#include "kern-run/compare_report.h"

using namespace kern;
using namespace kern::run;

namespace {

/// Deterministic values in [-1, 1) (a 64-bit LCG).
struct Lcg {
  uint64_t s = 12345;
  double next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(s >> 11) / static_cast<double>(1ull << 52) - 1.0;
  }
};

std::vector<uint8_t> bf16_bytes(const std::vector<double>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t b = f32_to_bf16(static_cast<float>(v[i]));
    std::memcpy(out.data() + 2 * i, &b, 2);
  }
  return out;
}

/// A region of `n` values of magnitude ~3, and B's copy: each value times
/// (1 + scale) and, per element, times (1 + noise x a uniform in [-1, 1)).
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> region(size_t n, double scale, double noise) {
  Lcg g;
  std::vector<double> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = 3 * g.next();
    b[i] = a[i] * (1 + scale) * (1 + noise * g.next());
  }
  return {bf16_bytes(a), bf16_bytes(b)};
}

ReplayMeasure measure_of(const std::pair<std::vector<uint8_t>, std::vector<uint8_t>>& ab) {
  return replay_measure(compare_region(plan::DType::bf16, ab.first, ab.second, Tolerance{}).sums, Tolerance{}.atol);
}

RegionResult region_result(const std::string& name, ReplayClass cls, double rel_l2 = 0) {
  RegionResult r{name, "bf16", {}, {}, "", "", true, {}};
  r.measure.cls = cls;
  r.measure.rel_l2 = rel_l2;
  return r;
}

}  // namespace

TEST_CASE("rounding noise is rounding; a scale error of 1 % is systematic at any rel L2", "[compare][measure]") {
  // bf16 rounding of values perturbed by up to 2^-8: what two kernels summing in another order leave.
  const ReplayMeasure noise = measure_of(region(1024, 0, 1.0 / 256));
  CHECK(noise.numel == 1024);
  CHECK(noise.rel_l2 > 0.001);
  CHECK(noise.rel_l2 < kRoundingRelL2);
  CHECK(std::fabs(noise.bias_z) < kBiasZ);
  CHECK(noise.cls == ReplayClass::kRounding);
  // 1 % larger everywhere: rel L2 0.01 sits at the rounding threshold, but the bias is consistent.
  const ReplayMeasure scaled = measure_of(region(1024, 0.01, 1.0 / 256));
  CHECK(scaled.scale_bias == Approx(0.01).epsilon(0.1));
  CHECK(scaled.bias_z > 20);
  CHECK(scaled.bias_z < 50);  // systematic by a z under ten times kBiasZ
  CHECK(scaled.cls == ReplayClass::kSystematic);
  // 0.3 % larger: a consistent bias too small to call either way.
  CHECK(measure_of(region(1024, 0.003, 1.0 / 256)).cls == ReplayClass::kUnclear);
  // Unbiased noise of rel L2 ~0.015 is more than rounding, ~0.05 a different function.
  const ReplayMeasure more = measure_of(region(1024, 0, 0.026));
  CHECK(more.rel_l2 > 0.012);
  CHECK(more.rel_l2 < 0.018);
  CHECK(std::fabs(more.bias_z) < kBiasZ);
  CHECK(more.cls == ReplayClass::kUnclear);
  const ReplayMeasure far = measure_of(region(1024, 0, 0.087));
  CHECK(far.rel_l2 > 0.04);
  CHECK(far.rel_l2 < 0.06);
  CHECK(far.cls == ReplayClass::kSystematic);
  // Identical copies: nothing at all.
  const auto same = region(64, 0, 0);
  const ReplayMeasure zero = measure_of({same.first, same.first});
  CHECK(zero.rel_l2 == 0);
  CHECK(zero.scale_bias == 0);
  CHECK(zero.bias_z == 0);
  CHECK(zero.cls == ReplayClass::kRounding);
}

TEST_CASE("each replay threshold: 0.75 times it is on the near side, 1.5 times it past", "[compare][measure]") {
  CHECK(classify_replay(0.75 * kRoundingRelL2, 0, 0) == ReplayClass::kRounding);
  CHECK(classify_replay(1.5 * kRoundingRelL2, 0, 0) == ReplayClass::kUnclear);
  CHECK(classify_replay(0.75 * kSystematicRelL2, 0, 0) == ReplayClass::kUnclear);
  CHECK(classify_replay(1.5 * kSystematicRelL2, 0, 0) == ReplayClass::kSystematic);
  CHECK(classify_replay(std::numeric_limits<double>::quiet_NaN(), 0, 0) == ReplayClass::kSystematic);
  CHECK(classify_replay(std::numeric_limits<double>::infinity(), 0, 0) == ReplayClass::kSystematic);
  // A bias counts only at |z| >= kBiasZ, either sign.
  CHECK(classify_replay(0, 1.5 * kSystematicScaleBias, 1.5 * kBiasZ) == ReplayClass::kSystematic);
  CHECK(classify_replay(0, -1.5 * kSystematicScaleBias, -1.5 * kBiasZ) == ReplayClass::kSystematic);
  CHECK(classify_replay(0, 1.5 * kSystematicScaleBias, 0.75 * kBiasZ) == ReplayClass::kRounding);
  CHECK(classify_replay(0, 0.75 * kSystematicScaleBias, 1.5 * kBiasZ) == ReplayClass::kUnclear);
  CHECK(classify_replay(0, 1.5 * kRoundingScaleBias, 1.5 * kBiasZ) == ReplayClass::kUnclear);
  CHECK(classify_replay(0, 0.75 * kRoundingScaleBias, 100) == ReplayClass::kRounding);
  // The worse of the two.
  CHECK(classify_replay(1.5 * kRoundingRelL2, 1.5 * kSystematicScaleBias, 1.5 * kBiasZ) == ReplayClass::kSystematic);
  CHECK(classify_replay(1.5 * kSystematicRelL2, 0, 0) == ReplayClass::kSystematic);
}

TEST_CASE("the measure: non-finite values, an all-zero region, integers", "[compare][measure]") {
  ReplaySums s;
  s.add(1.0, 1.0, 1.0);
  s.add(std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN(), 0);
  CHECK(replay_measure(s, 1e-3).cls == ReplayClass::kRounding);  // NaN against NaN is no difference
  s.add(2.0, std::numeric_limits<double>::infinity(), 2.0);
  const ReplayMeasure inf = replay_measure(s, 1e-3);
  CHECK(std::isinf(inf.rel_l2));
  CHECK(inf.cls == ReplayClass::kSystematic);
  // A is all zero: the denominator is atol per element, so 1e-5 against 0 is rel L2 0.01, not infinite.
  ReplaySums z;
  for (int i = 0; i < 4; ++i) z.add(0.0, 1e-5, 0.0);
  CHECK(replay_measure(z, 1e-3).rel_l2 == Approx(0.01));
  CHECK(replay_measure(z, 1e-3).scale_bias == 0);
  // Merged sums are the sums of both.
  ReplaySums m = z;
  m.merge(z);
  CHECK(m.numel == 8);
  CHECK(m.err2 == Approx(2 * z.err2));
  CHECK(exact_measure(5, 0).cls == ReplayClass::kRounding);
  CHECK(exact_measure(5, 1).cls == ReplayClass::kSystematic);
  CHECK(std::string(replay_class_name(ReplayClass::kUnclear)) == "unclear");
}

TEST_CASE("a region the span reads and writes is measured on the elements it changed, its bias on the change",
          "[compare][measure]") {
  // A residual of magnitude ~3; the span adds an update of ~0.1 to half the elements. B's update is 1 % larger.
  Lcg g;
  const size_t n = 512;
  std::vector<double> before(n), a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    before[i] = 3 * g.next();
    const double u = i % 2 == 0 ? 0.1 * g.next() : 0;
    a[i] = before[i] + u;
    b[i] = before[i] + 1.01 * u;
  }
  // f32 keeps the update's 1 % visible (bf16 would round most of it away at magnitude 3).
  auto f32 = [](const std::vector<double>& v) {
    std::vector<uint8_t> out(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
      const float f = static_cast<float>(v[i]);
      std::memcpy(out.data() + 4 * i, &f, 4);
    }
    return out;
  };
  const RegionDiff d = compare_region(plan::DType::f32, f32(a), f32(b), Tolerance{}, f32(before));
  CHECK(d.numel == n);
  CHECK(d.sums.numel == n / 2);  // the unchanged half is left out
  const ReplayMeasure m = replay_measure(d.sums, 1e-3);
  CHECK(m.scale_bias == Approx(0.01).epsilon(0.01));  // on the update: 1 %
  CHECK(m.cls == ReplayClass::kSystematic);
  // Without `before` the bias is taken on the whole value, where the 1 % of a small update is ~0.
  const RegionDiff whole = compare_region(plan::DType::f32, f32(a), f32(b), Tolerance{});
  CHECK(whole.sums.numel == n);
  CHECK(std::fabs(replay_measure(whole.sums, 1e-3).scale_bias) < 0.001);
  // A `before` of another length is ignored.
  CHECK(compare_region(plan::DType::f32, f32(a), f32(b), Tolerance{}, f32({1.0})).sums.numel == n);
}

TEST_CASE("the verdict follows the replay measure: systematic FAILs by its labels, unclear is INCONCLUSIVE",
          "[compare][verdict][measure]") {
  CompareResult r;
  r.spans.resize(3);
  for (uint32_t i = 0; i < 3; ++i) {
    r.spans[i].program = "decode";
    r.spans[i].index = i;
  }
  r.spans[0].a_labels = r.spans[0].b_labels = {"embed_tokens"};
  r.spans[1].a_labels = {"layers.0.post_attention_layernorm+gate_up_proj+silu_and_mul"};
  r.spans[1].b_labels = {"layers.0.post_attention_layernorm", "layers.0.gate_up_proj", "layers.0.silu_and_mul"};
  r.spans[1].dispatches = {4, 5, 8, 11};
  r.spans[2].a_labels = r.spans[2].b_labels = {"norm+lm_head+argmax"};
  r.spans[0].regions.push_back(region_result("buffer 'residual'", ReplayClass::kRounding, 0.003));
  r.spans[1].regions.push_back(region_result("buffer 'act'", ReplayClass::kRounding, 0.004));
  r.spans[2].regions.push_back(region_result("buffer 'next_token'", ReplayClass::kSystematic));
  r.spans[2].regions.back().judged = false;  // an argmax flipped at a near-tie: the steps judge it
  r.steps.resize(2);
  r.steps[0].logits.kl = 0.001;
  const double kl = CompareConfig{}.kl_threshold;
  VerdictResult v = judge(r, kl);
  CHECK(v.verdict == Verdict::kPass);
  CHECK_FALSE(v.by_measure);
  // The MLP span computes something else: FAIL, although every step's KL is small.
  r.spans[1].regions.push_back(region_result("buffer 'gate_up'", ReplayClass::kSystematic, 0.03));
  v = judge(r, kl);
  CHECK(v.verdict == Verdict::kFail);
  CHECK(v.by_measure);
  REQUIRE(v.first_bad_span);
  CHECK(*v.first_bad_span == 1);
  CHECK(v.first_bad_region == 1);
  CHECK_THAT(v.reason, Catch::Matchers::StartsWith(
                           "span replay: decode span 1 (A: layers.0.post_attention_layernorm+gate_up_proj+silu_and_mul; "
                           "B: layers.0.post_attention_layernorm, layers.0.gate_up_proj, layers.0.silu_and_mul): "
                           "buffer 'gate_up' rel L2 0.03 > 0.02"));
  CompareConfig cfg;
  cfg.prompt_ids = {1};
  const std::string text = render_compare_text(r, v, cfg);
  CHECK_THAT(text, Catch::Matchers::Contains("first span the replay measure calls systematic: decode span 1"));
  CHECK_THAT(text, Catch::Matchers::Contains("B dispatches 8..10: layers.0.post_attention_layernorm, "
                                             "layers.0.gate_up_proj, layers.0.silu_and_mul"));
  CHECK_THAT(render_compare_json(r, v, cfg), Catch::Matchers::Contains(
                                                 "\"by\":\"replay measure\",\"a_labels\":[\"layers.0.post_attention_"
                                                 "layernorm+gate_up_proj+silu_and_mul\"]"));
  // Unclear (between the thresholds): the measure cannot tell; INCONCLUSIVE names the span.
  r.spans[1].regions[1].measure.cls = ReplayClass::kUnclear;
  v = judge(r, kl);
  CHECK(v.verdict == Verdict::kInconclusive);
  CHECK(verdict_exit_code(v.verdict) == 3);
  CHECK_THAT(v.reason, Catch::Matchers::Contains("more than rounding, too little to call systematic"));
  // A KL between the default threshold (0.01) and ten times it FAILs (the logits' own check), ahead of an
  // unclear span.
  r.steps[1].logits.kl = 0.02;
  v = judge(r, kl);
  CHECK(v.verdict == Verdict::kFail);
  CHECK_FALSE(v.by_measure);
  CHECK_THAT(v.reason, Catch::Matchers::StartsWith("decode step 1: KL 0.02 >= 0.01"));
  r.steps[1].logits.kl = 0.009;
  r.spans[1].regions[1].measure.cls = ReplayClass::kRounding;
  CHECK(judge(r, kl).verdict == Verdict::kPass);
  // A high noise floor stays INCONCLUSIVE, ahead of a systematic span.
  r.spans[1].regions[1].measure.cls = ReplayClass::kSystematic;
  r.steps[0].floor.kl = kl;
  CHECK(judge(r, kl).verdict == Verdict::kInconclusive);
}

TEST_CASE("a flip is a near-tie within four times the free run's RMS logit error, not past it", "[compare][metrics]") {
  // 64 logits; B = A + noise of RMS ~0.1 on every token but the top two, which B swaps: A's gap `gap`.
  auto f32 = [](const std::vector<double>& v) {
    std::vector<uint8_t> out(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
      const float f = static_cast<float>(v[i]);
      std::memcpy(out.data() + 4 * i, &f, 4);
    }
    return out;
  };
  auto flip_with_gap = [&](double gap) {
    Lcg g;
    std::vector<double> a(64), b(64);
    for (size_t i = 0; i < 64; ++i) {
      a[i] = 2 * g.next();
      b[i] = a[i] + 0.1 * std::sqrt(3.0) * g.next();
    }
    a[0] = b[1] = 10;
    a[1] = b[0] = 10 - gap;
    return compare_logits(plan::DType::f32, f32(a), f32(b), 64);
  };
  const StepLogits close = flip_with_gap(0.3);
  CHECK(close.a_argmax == 0);
  CHECK(close.b_argmax == 1);
  CHECK(close.rms_diff == Approx(0.1).epsilon(0.2));
  CHECK(close.a_gap > 0.005 * close.a_spread);  // not a near-tie by the spread or an ulp ...
  CHECK(close.a_gap > bf16_ulp(10));
  CHECK(close.a_gap <= kNearTieRmsDiffs * close.rms_diff);
  CHECK(close.near_tie);  // ... but within 4 x rms_diff
  const StepLogits far = flip_with_gap(0.6);
  CHECK(far.a_gap > kNearTieRmsDiffs * far.rms_diff);
  CHECK_FALSE(far.near_tie);
}
