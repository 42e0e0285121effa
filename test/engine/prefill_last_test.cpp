// The prompt's last chunk through `prefill_last` (docs/causal-lm-manifest.md
// "prefill_last") on the tiny model and the cpu device: it leaves the id
// after the prompt in next_token[0] and the first decode step's inputs in the
// carries (as the first `decode` of the last prompt token leaves them), so
// the asynchronous loop goes on from it with no host write; the engine takes
// the first id from it (no decode step of the last prompt token: one more
// prefill chunk, one decode step fewer), in both loops and at every chunk
// size; a plan without it (an older manifest) keeps the decode step and
// gives the same ids on the tiny model (its weights have no near-tie), as do
// the unfused plan; the batched engine reads the first id back a step later
// and gives each request its solo ids, and an abort while that id is in
// flight drains it.
#include <catch2/catch.hpp>

#include <map>

#include "kern-engine/model_runner.h"
#include "test/engine/run_until_idle.h"
#include "test/engine/tiny_model.h"

using namespace kern;
using namespace kern::test;

namespace {

template <typename T>
T read_carry(load::Executable& exe, uint32_t buffer) {
  T v{};
  REQUIRE(exe.read_buffer(buffer, std::span(reinterpret_cast<uint8_t*>(&v), sizeof v)).ok());
  return v;
}

/// Greedy ids of `prompt` on a fresh model of plan `plan_env`.
engine::SequenceResult generate_on(const char* plan_env, const std::vector<int64_t>& prompt, uint64_t steps,
                                   uint64_t chunk, bool sync) {
  TinyModel m = load_tiny_model(0, nullptr, plan_env);
  auto out = run_generate(*m.model, request(prompt, steps, chunk, {}, sync));
  if (!out.ok()) FAIL(out.error().message);
  return out.value();
}

}  // namespace

TEST_CASE("prefill_last leaves the id after the prompt and the first decode step's inputs", "[engine][prefill_last]") {
  TinyModel m = load_tiny_model(256);
  const engine::CausalLmContract& c = m.contract;
  REQUIRE(c.has_prefill_last());
  const auto solo = run_generate(*m.model, request(kTinyPrompt, 4, 8, {}, true));
  REQUIRE(solo.ok());
  engine::ModelRunner& runner = m.model->runner();
  REQUIRE(runner.write_block_table().ok());
  const uint64_t n = kTinyPrompt.size();  // 22: chunks 8, 8 through prefill, 6 through prefill_last
  REQUIRE(runner.prefill(std::span(kTinyPrompt).first(16), 0, 8).ok());
  auto id = runner.prefill_last(std::span(kTinyPrompt).subspan(16), 16);
  REQUIRE(id.ok());
  CHECK(*id == solo->generated_ids[0]);
  CHECK(read_carry<int64_t>(*m.exe, c.next_token) == *id);
  CHECK(read_carry<int64_t>(*m.exe, c.token_ids) == *id);
  CHECK(read_carry<int64_t>(*m.exe, c.positions) == static_cast<int64_t>(n));
  CHECK(read_carry<int64_t>(*m.exe, c.slot_mapping) == static_cast<int64_t>(n));  // identity table
  CHECK(read_carry<int32_t>(*m.exe, c.seq_lens) == static_cast<int32_t>(n + 1));

  // Asynchronously: its id is the decode queue's first; decode steps go on from its carries.
  REQUIRE(runner.write_block_table().ok());
  REQUIRE(runner.prefill(std::span(kTinyPrompt).first(16), 0, 8).ok());
  runner.clear_records();
  REQUIRE(runner.enqueue_prefill_last(std::span(kTinyPrompt).subspan(16), 16).ok());
  CHECK_FALSE(runner.enqueue_prefill_last(std::span(kTinyPrompt).subspan(16), 16).ok());  // a step is in flight
  std::vector<int64_t> ids;
  for (int k = 0; k < 3; ++k) REQUIRE(runner.enqueue_decode().ok());
  for (int k = 0; k < 4; ++k) {
    auto next = runner.next_decoded();
    REQUIRE(next.ok());
    ids.push_back(*next);
  }
  CHECK(ids == solo->generated_ids);
  CHECK(runner.records().size() == 3);  // decode steps only: prefill_last is no decode step
  for (const engine::DecodeStepRecord& r : runner.records()) CHECK(r.host_writes == 0);
}

TEST_CASE("prefill_last refuses an empty or oversized chunk, and a plan without it", "[engine][prefill_last]") {
  TinyModel m = load_tiny_model(256);
  engine::ModelRunner& runner = m.model->runner();
  REQUIRE(runner.write_block_table().ok());
  auto empty = runner.prefill_last({}, 0);
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message.find("prefill_last of 0 tokens; it takes 1 to 512") != std::string::npos);
  std::vector<int64_t> big(513, 3);
  CHECK_FALSE(runner.prefill_last(big, 0).ok());
  TinyModel old = load_tiny_model(256, nullptr, "KERN_TINY_PLAN_NO_PREFILL_LAST");
  CHECK_FALSE(old.contract.has_prefill_last());
  auto none = old.model->runner().prefill_last(std::span(kTinyPrompt).first(2), 0);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.find("the plan has no program 'prefill_last'") != std::string::npos);
}

TEST_CASE("the engine takes the first id from prefill_last; an older plan from a decode step, with the same ids",
          "[engine][prefill_last]") {
  const std::vector<int64_t> reference = generate_on("KERN_TINY_PLAN", kTinyPrompt, 6, 512, true).generated_ids;
  REQUIRE(reference.size() == 6);
  for (const uint64_t chunk : {1, 5, 7, 22, 512}) {
    for (const bool sync : {false, true}) {
      INFO("chunk " << chunk << (sync ? " sync" : " async"));
      const engine::SequenceResult now = generate_on("KERN_TINY_PLAN", kTinyPrompt, 6, chunk, sync);
      CHECK(now.generated_ids == reference);
      // All 22 tokens through prefill (the last chunk through prefill_last);
      // decode steps: one per id after the first.
      CHECK(now.prefill_chunks == (22 + chunk - 1) / chunk);
      CHECK(now.records.size() == 5);
      const engine::SequenceResult old = generate_on("KERN_TINY_PLAN_NO_PREFILL_LAST", kTinyPrompt, 6, chunk, sync);
      CHECK(old.generated_ids == reference);
      CHECK(old.prefill_chunks == (21 + chunk - 1) / chunk);
      CHECK(old.records.size() == 6);  // the last prompt token's decode step too
    }
  }
  // A one-token prompt: no prefill; its first id from a decode step, as with
  // the older plan (prefill_last at one row would read every weight for it).
  const engine::SequenceResult one = generate_on("KERN_TINY_PLAN", {42}, 3, 512, false);
  CHECK(one.prefill_chunks == 0);
  CHECK(one.records.size() == 3);
  CHECK(one.generated_ids == generate_on("KERN_TINY_PLAN_NO_PREFILL_LAST", {42}, 3, 512, false).generated_ids);
  // The unfused manifest's prefill_last (a one-row GEMM lm_head and argmax).
  CHECK(generate_on("KERN_TINY_UNFUSED_PLAN", kTinyPrompt, 6, 7, false).generated_ids == reference);
  // max_tokens 1: the first id alone, no decode step.
  const engine::SequenceResult first = generate_on("KERN_TINY_PLAN", kTinyPrompt, 1, 8, false);
  CHECK(first.generated_ids == std::vector<int64_t>{reference[0]});
  CHECK(first.records.empty());
  CHECK(first.surplus_steps == 0);
}

TEST_CASE("the batched engine takes first ids from prefill_last: solo ids, and an abort in flight drains",
          "[engine][prefill_last][batch]") {
  TinyModel m = load_tiny_model();
  std::map<engine::RequestId, std::vector<int64_t>> solo;
  const std::vector<std::vector<int64_t>> prompts = {kTinyPrompt, {7, 8, 9}, {42}};
  for (engine::RequestId id = 0; id < prompts.size(); ++id) {
    auto r = run_generate(*m.model, request(prompts[id], 5, 8));
    REQUIRE(r.ok());
    solo[id] = r->generated_ids;
  }
  engine::Engine e(*m.model);
  REQUIRE(e.set_max_batch(4).ok());
  for (engine::RequestId id = 0; id < prompts.size(); ++id)
    REQUIRE(e.add_request({id, prompts[id], 5, {}, 8}).ok());
  auto out = run_until_idle(e);
  for (engine::RequestId id = 0; id < prompts.size(); ++id) {
    INFO("request " << id);
    CHECK(out[id].reason == engine::FinishReason::kLength);
    CHECK(out[id].ids == solo[id]);
  }
  // Abort a request whose prefill_last ran and whose first id is not taken yet.
  REQUIRE(e.add_request({10, {7, 8, 9}, 5, {}, 8}).ok());
  auto ev = e.step();  // admits it and runs its only chunk (prefill_last)
  REQUIRE(ev.ok());
  CHECK(m.model->runner().in_flight() == 1);
  CHECK_FALSE(e.idle());
  e.abort(10);
  auto aborted = run_until_idle(e);
  CHECK(aborted[10].reason == engine::FinishReason::kAborted);
  CHECK(m.model->runner().in_flight() == 0);
  // The engine goes on: the next request gets its solo ids.
  REQUIRE(e.add_request({11, kTinyPrompt, 5, {}, 8}).ok());
  CHECK(run_until_idle(e)[11].ids == solo[0]);
}
