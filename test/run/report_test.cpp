// kern-run's run report on made-up results: decode figures only over the
// steps actually timed (issue 25 item 4: `--steps 2` asynchronous printed
// "1 steps, 0.002 ms/token (630914.8 tok/s)"), speculative runs report by
// round instead of "too few steps", and a near-zero acceptance says why.
#include <catch2/catch.hpp>

#include "kern-run/report.h"
#include "kern-run/spec_report.h"
#include "rapidjson/document.h"

using namespace kern;
using Catch::Matchers::Contains;

namespace {

const std::vector<int64_t> kPrompt = {1, 2, 3};

/// Only the lines of `text` that start with `prefix`.
std::string lines_with(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at + 1);
    if (line.rfind(prefix, 0) == 0) out += line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

engine::SequenceResult decoded(uint64_t steps, uint64_t timed, double ms, bool sync = false) {
  engine::SequenceResult r;
  r.generated_ids.assign(steps + 1, 7);
  r.decode_steps = steps;
  r.decode_steps_timed = timed;
  r.decode_ms = ms;
  r.sync = sync;
  r.prefill_ms = 1;
  return r;
}

rapidjson::Document json_of(const engine::SequenceResult& r, const run::ReportContext& ctx) {
  rapidjson::Document doc;
  doc.Parse(run::render_json(r, ctx).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  return doc;
}

}  // namespace

TEST_CASE("decode figures are over the timed steps, and absent when none was timed", "[run][report]") {
  run::ReportContext ctx;
  ctx.prompt_ids = &kPrompt;
  // --steps 2 asynchronous: one decode step, issued with the first: not timed.
  const auto none = decoded(1, 0, 0.002);
  CHECK(lines_with(run::render_stats(none, ctx), "decode: ") ==
        "decode: 1 step, too few timed for per-token figures (the asynchronous loop issues the second step with the "
        "first; more --steps, or --sync)\n");
  auto doc = json_of(none, ctx);
  CHECK(doc["decode_ms_per_token"].IsNull());
  CHECK(doc["decode_tokens_per_s"].IsNull());
  CHECK(doc["decode_steps"].GetUint64() == 1);
  CHECK(doc["decode_steps_timed"].GetUint64() == 0);
  // 31 steps asynchronous, 30 timed in 60 ms: 2 ms/token, 500 tok/s (not 31 / 60 ms).
  const auto async = decoded(31, 30, 60.0);
  CHECK(lines_with(run::render_stats(async, ctx), "decode: ") ==
        "decode: 31 steps (30 timed), 2.000 ms/token (500.0 tok/s)\n");
  doc = json_of(async, ctx);
  CHECK(doc["decode_ms_per_token"].GetDouble() == 2.0);
  CHECK(doc["decode_tokens_per_s"].GetDouble() == 500.0);
  // Synchronous: every step timed.
  CHECK(lines_with(run::render_stats(decoded(4, 4, 10.0, true), ctx), "decode: ") ==
        "decode: 4 steps, 2.500 ms/token (400.0 tok/s)\n");
  // One generated id: no decode step at all.
  CHECK(lines_with(run::render_stats(decoded(0, 0, 0), ctx), "decode: ") == "decode: 0 steps\n");
}

TEST_CASE("a speculative run reports by round, with a note when acceptance is near zero", "[run][report]") {
  run::ReportContext ctx;
  ctx.prompt_ids = &kPrompt;
  engine::SequenceResult r = decoded(31, 31, 62.0, true);
  r.spec = engine::SpecStats{};
  r.spec->block = 8;
  for (int i = 0; i < 31; ++i) r.spec->rounds.push_back({0, 1, 1.0, 0.5, 0.25});
  ctx.random_weights = true;
  const std::string text = run::render_stats(r, ctx);
  CHECK(lines_with(text, "decode loop: ") ==
        "decode loop: speculative rounds (each reads its ids back; figures by round below)\n");
  CHECK(lines_with(text, "note: ") ==
        "note: acceptance is near zero because the draft's weights are random (--random-weights or "
        "gen_random_weights.py): each round then yields about one token for a draft and a verify, so speculation is "
        "slower than plain decoding; a trained DSpark draft accepts ~3.4 tokens per round\n");
  auto doc = json_of(r, ctx);
  CHECK(std::string(doc["spec"]["acceptance_note"].GetString()) == run::spec_acceptance_note(*r.spec, true));
  ctx.random_weights = false;
  CHECK(lines_with(run::render_stats(r, ctx), "note: ") ==
        "note: acceptance is near zero: the draft predicts almost none of the target's tokens; each round then "
        "yields about one token for a draft and a verify, so speculation is slower than plain decoding (are the "
        "draft's weights random, or trained for another target model? docs/speculative.md)\n");
  // 1 of 7 drafted accepted per round (14%): no note, and the JSON says null.
  for (auto& round : r.spec->rounds) round.accepted = 1;
  CHECK(lines_with(run::render_stats(r, ctx), "note: ").empty());
  CHECK(json_of(r, ctx)["spec"]["acceptance_note"].IsNull());
  // Exactly at the threshold (5%) there is no note; just below it there is.
  engine::SpecStats edge;
  edge.block = 21;  // 20 drafted per round
  edge.rounds.push_back({1, 2, 0, 0, 0});
  CHECK(run::spec_acceptance_note(edge, true).empty());
  edge.block = 22;  // 1 of 21: 4.8%
  CHECK_FALSE(run::spec_acceptance_note(edge, true).empty());
}
