// kern-run compare (docs/compare.md): span alignment by label, the region
// and logit metrics, the verdict, and whole comparisons of the tiny models
// on the cpu device: fused against unfused passes, a deliberately broken
// kernel variant fails at the dispatch it breaks, a nondeterministic side is
// inconclusive; and the command's exit codes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/bf16.h"
#include "kern-run/compare_align.h"
#include "kern-run/compare_metrics.h"
#include "kern-run/compare_report.h"
#include "kern-run/compare_session.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "rapidjson/document.h"
#include "test/run/cli_runner.h"

using namespace kern;
using namespace kern::run;
using kern::test::env_path;

namespace {

std::vector<uint8_t> bf16_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t b = f32_to_bf16(v[i]);
    std::memcpy(out.data() + 2 * i, &b, 2);
  }
  return out;
}

// A deliberately broken silu_and_mul: the reference result times 1.5.
Status broken_silu_and_mul(const cpu::CpuLaunch& l) {
  KERN_RETURN_IF_ERROR(cpu::silu_and_mul_bf16(l));
  const int64_t tokens = l.arg<int32_t>(2), d = l.arg<int32_t>(3);
  auto* out = l.arg<uint16_t*>(1);
  for (int64_t i = 0; i < tokens * d; ++i) out[i] = f32_to_bf16(1.5f * bf16_to_f32(out[i]));
  return Status::ok_status();
}

// silu_and_mul that is wrong on every third call: a side whose second run
// differs from its first (a nondeterministic kernel; one run of the test's
// comparison makes 16 calls, not a multiple of 3).
int g_flaky_calls = 0;
Status flaky_silu_and_mul(const cpu::CpuLaunch& l) {
  KERN_RETURN_IF_ERROR(cpu::silu_and_mul_bf16(l));
  if (++g_flaky_calls % 3 != 0) return Status::ok_status();
  const int64_t tokens = l.arg<int32_t>(2), d = l.arg<int32_t>(3);
  auto* out = l.arg<uint16_t*>(1);
  for (int64_t i = 0; i < tokens * d; ++i) out[i] = f32_to_bf16(-2.0f * bf16_to_f32(out[i]));
  return Status::ok_status();
}

const cpu::CpuKernel kBroken{cpu::detail::guarded<broken_silu_and_mul>, cpu::silu_and_mul_bf16_extents};
const cpu::CpuKernel kFlaky{cpu::detail::guarded<flaky_silu_and_mul>, cpu::silu_and_mul_bf16_extents};

load::CpuKernelResolver replacing_silu(const cpu::CpuKernel* k) {
  return [k](std::string_view symbol) {
    return symbol == "kern_silu_and_mul_bf16" ? k : cpu::find_cpu_kernel(symbol);
  };
}

CompareConfig tiny_config(const std::string& a, const std::string& b) {
  CompareConfig c;
  c.a.plan_path = a;
  c.b.plan_path = b;
  c.one_plan = a == b;
  c.weights_path = env_path("KERN_TINY_WEIGHTS");
  c.prompt_ids = {1, 17, 42, 99, 3, 250, 7};
  c.steps = 6;
  c.chunk = 4;  // two prefill chunks
  return c;
}

}  // namespace

TEST_CASE("compound labels split on '+' and take the first part's prefix", "[compare][align]") {
  CHECK(label_parts("layers.0.input_layernorm+qkv_proj") ==
        std::vector<std::string>{"layers.0.input_layernorm", "layers.0.qkv_proj"});
  CHECK(label_parts("norm+lm_head+argmax") == std::vector<std::string>{"norm", "lm_head", "argmax"});
  CHECK(label_parts("embed_tokens") == std::vector<std::string>{"embed_tokens"});
  CHECK(label_parts("layers.1.a+layers.2.b") == std::vector<std::string>{"layers.1.a", "layers.2.b"});
}

TEST_CASE("fused and unfused decode labels align into spans of whole dispatches", "[compare][align]") {
  const std::vector<std::string> fused = {"embed_tokens",
                                          "layers.0.input_layernorm+qkv_proj",
                                          "layers.0.qk_norm+rope+kv_cache_write",
                                          "layers.0.attention",
                                          "layers.0.o_proj+residual",
                                          "layers.0.post_attention_layernorm+gate_up_proj+silu_and_mul",
                                          "layers.0.down_proj+residual",
                                          "layers.1.input_layernorm+qkv_proj",
                                          "norm+lm_head+argmax",
                                          "advance"};
  const std::vector<std::string> unfused = {
      "embed_tokens",      "layers.0.input_layernorm", "layers.0.qkv_proj", "layers.0.q_norm",
      "layers.0.k_norm",   "layers.0.rope",            "layers.0.kv_cache_write", "layers.0.attention",
      "layers.0.o_proj",   "layers.0.post_attention_layernorm", "layers.0.gate_up_proj",
      "layers.0.silu_and_mul", "layers.0.down_proj", "layers.1.input_layernorm", "layers.1.qkv_proj",
      "norm", "lm_head", "argmax", "advance"};
  auto spans = align_dispatches(fused, unfused);
  REQUIRE(spans.size() == 8);
  auto is = [](const DispatchSpan& s, uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1) {
    return s.a_first == a0 && s.a_end == a1 && s.b_first == b0 && s.b_end == b1;
  };
  CHECK(is(spans[0], 0, 1, 0, 1));    // embed_tokens
  CHECK(is(spans[1], 1, 2, 1, 3));    // input_layernorm+qkv_proj | input_layernorm, qkv_proj
  CHECK(is(spans[2], 2, 3, 3, 7));    // qk_norm+rope+kv_cache_write | q_norm .. kv_cache_write
  CHECK(is(spans[3], 3, 4, 7, 8));    // attention
  CHECK(is(spans[4], 4, 6, 8, 12));   // o_proj+residual, post_attention..silu | o_proj .. silu_and_mul
  CHECK(is(spans[5], 6, 8, 12, 15));  // down_proj+residual, layers.1 qkv | down_proj, layers.1 norm, qkv
  CHECK(is(spans[6], 8, 9, 15, 18));  // norm+lm_head+argmax | norm, lm_head, argmax
  CHECK(is(spans[7], 9, 10, 18, 19)); // advance
  // Identical lists: one span per dispatch; nothing in common: one span.
  CHECK(align_dispatches(unfused, unfused).size() == unfused.size());
  auto none = align_dispatches({"x", "y"}, {"p", "q", "r"});
  REQUIRE(none.size() == 1);
  CHECK(is(none[0], 0, 2, 0, 3));
  CHECK(align_dispatches({}, unfused).empty());
  // Trailing dispatches on one side only join the last span.
  auto tail = align_dispatches({"a", "b"}, {"a", "b", "extra"});
  REQUIRE(tail.size() == 2);
  CHECK(is(tail[1], 1, 2, 1, 3));
}

TEST_CASE("bf16 regions report max errors, the ulp histogram and the first differing element", "[compare][metrics]") {
  auto a = bf16_bytes({1.0f, 2.0f, -3.0f, 0.0f, 100.0f});
  auto b = a;
  const uint16_t up1 = f32_to_bf16(2.0f) + 1;  // 2 + one ulp (2^-6)
  std::memcpy(b.data() + 2, &up1, 2);
  const uint16_t far = f32_to_bf16(-3.5f);
  std::memcpy(b.data() + 4, &far, 2);
  RegionDiff d = compare_region(plan::DType::bf16, a, b, Tolerance{});
  CHECK(d.numel == 5);
  CHECK(d.mismatches == 2);
  CHECK(d.max_abs == Approx(0.5));
  CHECK(d.max_rel == Approx(0.5 / 3));
  CHECK(d.ulp_hist[0] == 3);
  CHECK(d.ulp_hist[1] == 1);
  CHECK(d.ulp_hist[6] == 1);  // -3 vs -3.5: 32 ulps
  REQUIRE(d.has_first);
  CHECK(d.first_index == 1);
  CHECK(d.first_a == 2.0);
  CHECK(d.first_b == Approx(2.015625));
  CHECK(d.within_tolerance);  // 0.5 <= 0.001 + 100/32
  CHECK_FALSE(compare_region(plan::DType::bf16, a, b, Tolerance{0.001, 0.001}).within_tolerance);
  CHECK(bf16_ulp_distance(f32_to_bf16(0.0f), f32_to_bf16(-0.0f)) == 0);
  CHECK(bf16_ulp_distance(0x7fc0, f32_to_bf16(1.0f)) == UINT32_MAX);
  CHECK(bf16_ulp(22.5) == 0.125);
  CHECK(bf16_ulp(1.0) == 1.0 / 128);
}

TEST_CASE("integer regions must be equal", "[compare][metrics]") {
  std::vector<int64_t> a = {5, 6, 7}, b = {5, 9, 7};
  auto bytes = [](const std::vector<int64_t>& v) {
    return std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                reinterpret_cast<const uint8_t*>(v.data()) + v.size() * 8);
  };
  RegionDiff d = compare_region(plan::DType::i64, bytes(a), bytes(b), Tolerance{1, 100});
  CHECK_FALSE(d.within_tolerance);
  CHECK(d.mismatches == 1);
  CHECK(d.first_index == 1);
  CHECK(d.first_b == 9);
  CHECK(compare_region(plan::DType::i64, bytes(a), bytes(a), Tolerance{}).within_tolerance);
}

TEST_CASE("logits give KL(A||B) and classify an argmax flip at one bf16 ulp as a near-tie", "[compare][metrics]") {
  // The case: 22.625 against 22.5, one bf16 ulp apart, swapped on B.
  auto a = bf16_bytes({22.625f, 22.5f, -10.0f, 3.0f});
  auto b = bf16_bytes({22.5f, 22.625f, -10.0f, 3.0f});
  StepLogits s = compare_logits(plan::DType::bf16, a, b, 4);
  CHECK(s.a_argmax == 0);
  CHECK(s.b_argmax == 1);
  CHECK(s.a_gap == 0.125);
  CHECK(s.near_tie);
  // KL of two 2-point-dominated softmaxes, computed in double here.
  const double e0 = std::exp(22.625), e1 = std::exp(22.5), e2 = std::exp(-10.0), e3 = std::exp(3.0);
  const double z = e0 + e1 + e2 + e3;
  const double pa[4] = {e0 / z, e1 / z, e2 / z, e3 / z}, pb[4] = {e1 / z, e0 / z, e2 / z, e3 / z};
  double kl = 0;
  for (int i = 0; i < 4; ++i) kl += pa[i] * std::log(pa[i] / pb[i]);
  CHECK(s.kl == Approx(kl).epsilon(1e-9));
  // A real flip: 2 apart out of a spread of 32.
  auto c = bf16_bytes({22.0f, 20.0f, -10.0f, 3.0f});
  auto d = bf16_bytes({20.0f, 22.0f, -10.0f, 3.0f});
  StepLogits f = compare_logits(plan::DType::bf16, c, d, 4);
  CHECK(f.a_argmax != f.b_argmax);
  CHECK_FALSE(f.near_tie);
  CHECK(compare_logits(plan::DType::bf16, a, a, 4).kl == 0);
}

TEST_CASE("the verdict: PASS with near-tie flips, FAIL past the threshold or on a real flip, INCONCLUSIVE on a high floor",
          "[compare][verdict]") {
  CompareResult r;
  r.spans.resize(2);
  r.spans[0].program = "decode";
  r.spans[0].b_labels = {"layers.0.attention"};
  r.spans[1].program = "decode";
  r.spans[1].index = 1;
  r.spans[1].b_labels = {"norm"};
  r.steps.resize(2);
  r.steps[1].logits.a_argmax = 3;
  r.steps[1].logits.b_argmax = 4;
  r.steps[1].logits.near_tie = true;
  r.steps[1].logits.kl = 0.002;
  VerdictResult v = judge(r, 0.01);
  CHECK(v.verdict == Verdict::kPass);
  CHECK(v.near_ties == 1);
  CHECK(verdict_exit_code(v.verdict) == 0);
  CompareConfig cfg;
  cfg.prompt_ids = {1, 2};
  CHECK_THAT(render_compare_text(r, v, cfg), Catch::Matchers::Contains("flip, near-tie (3 -> 4"));
  r.steps[1].logits.near_tie = false;
  v = judge(r, 0.01);
  CHECK(v.verdict == Verdict::kFail);
  CHECK_THAT(v.reason, Catch::Matchers::Contains("decode step 1: argmax 3 -> 4 is not a near-tie"));
  r.steps[1].logits.near_tie = true;
  r.steps[0].logits.kl = 0.5;
  r.spans[1].regions.push_back({"buffer 'x'", "bf16", {}, {}, "", "", true, {}});
  r.spans[1].regions[0].replay.within_tolerance = false;
  v = judge(r, 0.01);
  CHECK(v.verdict == Verdict::kFail);
  CHECK(verdict_exit_code(v.verdict) == 1);
  REQUIRE(v.first_bad_span);
  CHECK(*v.first_bad_span == 1);
  CHECK_THAT(v.reason, Catch::Matchers::Contains("first span past tolerance (span replay): decode span 1 'norm'"));
  r.steps[0].floor.kl = 0.006;
  v = judge(r, 0.01);
  CHECK(v.verdict == Verdict::kInconclusive);
  CHECK(verdict_exit_code(v.verdict) == 3);
}

TEST_CASE("the fused and unfused tiny models compare as PASS on the cpu device", "[compare][session]") {
  CompareConfig cfg = tiny_config(env_path("KERN_TINY_PLAN"), env_path("KERN_TINY_UNFUSED_PLAN"));
  auto r = run_compare(cfg);
  REQUIRE(r.ok());
  const CompareResult& res = r.value();
  CHECK(res.prefill_chunks == 2);
  CHECK(res.steps.size() == 6);
  VerdictResult v = judge(res, cfg.kl_threshold);
  INFO(render_compare_text(res, v, cfg));
  CHECK(v.verdict == Verdict::kPass);
  CHECK_FALSE(v.first_bad_span);
  // Prefill runs the same kernels on both: one span per dispatch, bit-identical.
  size_t prefill = 0, decode = 0;
  for (const SpanResult& s : res.spans) {
    (s.program == "prefill" ? prefill : decode)++;
    CHECK(s.runs == (s.program == "prefill" ? 2u : 6u));
    if (s.program == "prefill")
      for (const auto& reg : s.regions) CHECK(reg.replay.mismatches == 0);
  }
  CHECK(prefill == 25);
  // embed_tokens; layer 0's input_layernorm+qkv_proj; per layer qk_norm+rope+kv_cache_write+attention
  // (one fused dispatch, docs/kernels.md §13a) against q_norm .. attention, o_proj+residual with the MLP up
  // to silu, down_proj+residual with the next layer's (or the final) norm: the residual add is fused into
  // different dispatches; sample; advance.
  CHECK(decode == 10);
  for (const StepResult& s : res.steps) CHECK(s.logits.kl < 0.01);
  // Every span's replay is rounding by the measure; the decode spans of different kernels do differ.
  double max_rel_l2 = 0;
  for (const SpanResult& s : res.spans) {
    CHECK(s.replay_class() == ReplayClass::kRounding);
    for (const auto& reg : s.regions) max_rel_l2 = std::max(max_rel_l2, reg.measure.rel_l2);
  }
  CHECK(max_rel_l2 > 0.001);
  CHECK(max_rel_l2 < kRoundingRelL2);
  // The decode spans compare the regions both write: the fused attention span against the unfused one,
  // the attention output and the KV cache the step wrote.
  const SpanResult& attn = res.spans[25 + 2];
  CHECK(attn.b_labels == std::vector<std::string>{"layers.0.q_norm", "layers.0.k_norm", "layers.0.rope",
                                                  "layers.0.kv_cache_write", "layers.0.attention"});
  std::vector<std::string> names;
  for (const auto& reg : attn.regions) names.push_back(reg.name);
  INFO(names.size());
  CHECK(std::find(names.begin(), names.end(), "buffer 'attn_out'") != names.end());
}

TEST_CASE("a plan without a logits buffer (as kern-lift writes) is refused by compare, naming the side",
          "[compare][session]") {
  CompareConfig cfg = tiny_config(env_path("KERN_TINY_PLAN"), env_path("KERN_TINY_NOLOGITS_PLAN"));
  auto r = run_compare(cfg);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Matchers::Contains("B's plan has no 'logits' buffer"));
}

TEST_CASE("a broken kernel variant fails the comparison at the dispatch it breaks", "[compare][session]") {
  // B: the unfused plan whose silu_and_mul is wrong by a factor 1.5.
  CompareConfig cfg = tiny_config(env_path("KERN_TINY_PLAN"), env_path("KERN_TINY_UNFUSED_PLAN"));
  cfg.b.cpu_kernels = replacing_silu(&kBroken);
  auto r = run_compare(cfg);
  REQUIRE(r.ok());
  VerdictResult v = judge(r.value(), cfg.kl_threshold);
  INFO(render_compare_text(r.value(), v, cfg));
  CHECK(v.verdict == Verdict::kFail);
  REQUIRE(v.first_bad_span);
  const SpanResult& s = r.value().spans[*v.first_bad_span];
  CHECK(v.first_bad_mode == "span replay");
  CHECK(v.by_measure);  // named by the replay measure: 1.5 times the value is systematic
  CHECK(s.replay_class() == ReplayClass::kSystematic);
  CHECK(s.regions[v.first_bad_region].measure.scale_bias == Approx(0.5).epsilon(0.05));
  CHECK_THAT(v.reason,
             Catch::Matchers::StartsWith("span replay: prefill span 11 'layers.0.silu_and_mul': buffer 'act'"));
  CHECK(s.program == "prefill");
  CHECK(s.b_labels == std::vector<std::string>{"layers.0.silu_and_mul"});
  REQUIRE(s.regions.size() == 1);
  CHECK(s.regions[0].name == "buffer 'act'");
  CHECK(s.regions[0].replay_first_at == "prefill chunk at position 0");
  // Span replay isolates it: the next span (down_proj) starts from A's act and agrees.
  CHECK(r.value().spans[*v.first_bad_span + 1].replay_ok());
  CHECK_FALSE(r.value().spans[*v.first_bad_span + 1].free_ok());
}

TEST_CASE("one plan on two devices: every dispatch is a span, and the broken device fails at it", "[compare][session]") {
  const std::string unfused = env_path("KERN_TINY_UNFUSED_PLAN");
  CompareConfig cfg = tiny_config(unfused, unfused);
  cfg.b.cpu_kernels = replacing_silu(&kBroken);
  auto r = run_compare(cfg);
  REQUIRE(r.ok());
  CHECK(r.value().spans.size() == 25 + 30);  // the unfused prefill, decode (its sample dispatch too)
  VerdictResult v = judge(r.value(), cfg.kl_threshold);
  CHECK(v.verdict == Verdict::kFail);
  REQUIRE(v.first_bad_span);
  CHECK(*v.first_bad_span == 11);  // prefill dispatch 11, layers.0.silu_and_mul
  cfg.b.cpu_kernels = nullptr;
  cfg.b.device = "cpu";
  auto same = run_compare(cfg);
  REQUIRE(same.ok());
  VerdictResult pass = judge(same.value(), cfg.kl_threshold);
  CHECK(pass.verdict == Verdict::kPass);
  CHECK(pass.max_kl == 0);
  for (const SpanResult& s : same.value().spans)
    for (const auto& reg : s.regions) CHECK(reg.free.mismatches == 0);
}

TEST_CASE("a side that disagrees with its own second run makes the comparison INCONCLUSIVE", "[compare][session]") {
  const std::string unfused = env_path("KERN_TINY_UNFUSED_PLAN");
  CompareConfig cfg = tiny_config(unfused, unfused);
  g_flaky_calls = 0;
  cfg.a.cpu_kernels = replacing_silu(&kFlaky);
  cfg.b.device = "cpu";
  auto r = run_compare(cfg);
  REQUIRE(r.ok());
  VerdictResult v = judge(r.value(), cfg.kl_threshold);
  CHECK(v.verdict == Verdict::kInconclusive);
  CHECK(v.floor_max_kl >= cfg.kl_threshold / 2);
}

TEST_CASE("kern-run compare: exit codes, the report and --json", "[compare][cli]") {
  using kern::test::kern_run;
  using kern::test::shell_quote;
  const std::string a = shell_quote(env_path("KERN_TINY_PLAN")), b = shell_quote(env_path("KERN_TINY_UNFUSED_PLAN"));
  const std::string w = " --weights " + shell_quote(env_path("KERN_TINY_WEIGHTS"));
  auto pass = kern_run("compare " + a + " " + b + w + " --prompt-ids 1,17,42 --steps 3");
  INFO(pass.err);
  CHECK(pass.rc == 0);
  CHECK_THAT(pass.out, Catch::Matchers::Contains("verdict: PASS"));
  CHECK_THAT(pass.out, Catch::Matchers::Contains("decode   1     layers.0.input_layernorm, layers.0.qkv_"));
  auto json = kern_run("compare " + a + " " + b + w + " --prompt-ids 1,17,42 --steps 2 --json");
  CHECK(json.rc == 0);
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(std::string(doc["verdict"].GetString()) == "PASS");
  CHECK(doc["exit_code"].GetInt() == 0);
  CHECK(doc["steps"].Size() == 2);
  CHECK(doc["spans"][0]["regions"][0].HasMember("replay"));
  CHECK(doc["spans"][0]["regions"][0]["replay"].HasMember("ulp_histogram"));
  // Errors exit 2, never 1 (FAIL) or 3.
  auto no_weights = kern_run("compare " + a + " " + b + " --prompt-ids 1,2");
  CHECK(no_weights.rc == 2);
  CHECK_THAT(no_weights.err, Catch::Matchers::Contains("--weights is required"));
  auto missing = kern_run("compare /nonexistent.kplan " + b + w + " --prompt-ids 1,2");
  CHECK(missing.rc == 2);
  CHECK_THAT(missing.err, Catch::Matchers::Contains("/nonexistent.kplan"));
  auto bad_id = kern_run("compare " + a + " " + b + w + " --prompt-ids 1,99999");
  CHECK(bad_id.rc == 2);
  auto bad_option = kern_run("compare " + a + w + " --prompt-ids 1 --steps 0");
  CHECK(bad_option.rc == 2);
  auto no_tokenizer = kern_run("compare " + a + w + " --prompt hi");
  CHECK(no_tokenizer.rc == 2);
  CHECK_THAT(no_tokenizer.err, Catch::Matchers::Contains("--prompt needs --tokenizer"));
  auto other_model = kern_run("compare " + a + " " + shell_quote(env_path("KERN_TEXTVOCAB_PLAN")) + w + " --prompt-ids 1,2");
  CHECK(other_model.rc == 2);
  CHECK_THAT(other_model.err, Catch::Matchers::Contains("A's vocabulary has 256 ids, B's 151936"));
  // One plan: B defaults to cuda; without a driver that is an error (2), naming the side.
  auto no_gpu = kern_run("compare " + a + w + " --prompt-ids 1,2", "", "LD_LIBRARY_PATH=/nonexistent ");
  if (no_gpu.rc != 0) {
    CHECK(no_gpu.rc == 2);
    CHECK_THAT(no_gpu.err, Catch::Matchers::StartsWith("kern-run: error: B: "));
  }
}
