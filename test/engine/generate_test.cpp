// Greedy generation through the causal-LM caller contract on the tiny model and
// the cpu reference device. Token ids are compared exactly: the cpu device
// is deterministic (same inputs, same kernels, same order), so no tolerance.
#include <cmath>
#include <catch2/catch.hpp>

#include <algorithm>
#include <utility>

#include "test/engine/tiny_model.h"

using namespace kern;
using namespace kern::test;

namespace {


std::vector<int64_t> generate_ids(const std::vector<int64_t>& prompt, uint64_t steps, uint64_t chunk) {
  TinyModel m = load_tiny_model();
  auto r = run_generate(*m.model, request(prompt, steps, chunk));
  if (!r.ok()) FAIL(r.error().message);
  CHECK(r->generated_ids.size() == steps);
  return r->generated_ids;
}

/// Feeds every prompt token through `decode` (no prefill program at all):
/// the reference that chunked prefill must reproduce.
std::vector<int64_t> decode_only_ids(const std::vector<int64_t>& prompt, uint64_t steps) {
  TinyModel m = load_tiny_model();
  const engine::CausalLmContract& c = m.contract;
  load::Executable& exe = *m.exe;
  std::vector<int32_t> table(c.block_table_pages);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  auto bytes = [](const void* p, size_t n) { return std::span(static_cast<const uint8_t*>(p), n); };
  REQUIRE(exe.write_input(c.block_table, bytes(table.data(), table.size() * 4)).ok());
  const int32_t cu[2] = {0, 1};
  REQUIRE(exe.write_input(c.cu_seqlens_q, bytes(cu, 8)).ok());
  std::vector<int64_t> out;
  std::vector<uint64_t> symbols(exe.plan().symbols()->size(), 1);  // tokens = 1 (and batch = 1)
  int64_t token = prompt[0];
  for (int64_t pos = 0; out.size() < steps; ++pos) {
    int32_t seq_len = static_cast<int32_t>(pos + 1);
    REQUIRE(exe.write_input(c.token_ids, bytes(&token, 8)).ok());
    REQUIRE(exe.write_input(c.positions, bytes(&pos, 8)).ok());
    REQUIRE(exe.write_input(c.slot_mapping, bytes(&pos, 8)).ok());
    REQUIRE(exe.write_input(c.seq_lens, bytes(&seq_len, 4)).ok());
    REQUIRE(exe.run_program(c.decode, symbols).ok());
    int64_t next = 0;
    REQUIRE(exe.read_buffer(c.next_token, std::span(reinterpret_cast<uint8_t*>(&next), 8)).ok());
    bool in_prompt = static_cast<size_t>(pos + 1) < prompt.size();
    if (!in_prompt) out.push_back(next);
    token = in_prompt ? prompt[static_cast<size_t>(pos + 1)] : next;
  }
  return out;
}

}  // namespace

TEST_CASE("the tiny model's contract is resolved from the plan", "[run][contract]") {
  TinyModel m = load_tiny_model();
  CHECK(m.contract.vocab == 256);
  CHECK(m.contract.block_table_pages == 64);  // ceil(1024 / 16)
  CHECK(m.contract.tokens_max == 512);
  CHECK(m.capacity == 1024);
}

TEST_CASE("generated ids are reproducible across two runs", "[run][generate]") {
  auto a = generate_ids(kTinyPrompt, 12, 512);
  auto b = generate_ids(kTinyPrompt, 12, 512);
  CHECK(a == b);
}

TEST_CASE("prefill chunk sizes 1, 4 and 16 generate the same ids as feeding every token through decode",
          "[run][generate]") {
  auto reference = decode_only_ids(kTinyPrompt, 10);
  for (uint64_t chunk : {1, 4, 16, 512}) {
    INFO("chunk " << chunk);
    CHECK(generate_ids(kTinyPrompt, 10, chunk) == reference);
  }
}

TEST_CASE("the prompt's early tokens reach the generated ids through the KV cache", "[run][generate]") {
  // Teeth for the prefill path: if prefill wrote nothing (or the wrong slots),
  // changing only the first token could not change the output.
  std::vector<int64_t> other = kTinyPrompt;
  other[0] = 250;
  other[1] = 1;
  CHECK(generate_ids(kTinyPrompt, 10, 4) != generate_ids(other, 10, 4));
}

TEST_CASE("a one-token prompt is decoded directly, with prefill_last in the plan or without",
          "[run][generate]") {
  // CausalLmContract::prefill_last_for: prefill_last at one row would read
  // every weight for that row alone.
  TinyModel m = load_tiny_model();
  auto r = run_generate(*m.model, request({100}, 3));
  REQUIRE(r.ok());
  CHECK(r->prefill_chunks == 0);
  CHECK(r->decode_steps == 2);
  CHECK(r->generated_ids == decode_only_ids({100}, 3));
  TinyModel old = load_tiny_model(0, nullptr, "KERN_TINY_PLAN_NO_PREFILL_LAST");
  auto o = run_generate(*old.model, request({100}, 3));
  REQUIRE(o.ok());
  CHECK(o->prefill_chunks == 0);
  CHECK(o->decode_steps == 2);
  CHECK(o->generated_ids == r->generated_ids);
}

TEST_CASE("the chunk is clamped to the tokens bound and counts prefill runs", "[run][generate]") {
  TinyModel m = load_tiny_model();
  std::vector<int64_t> prompt(600, 7);
  auto r = run_generate(*m.model, request(prompt, 1, 10000));
  REQUIRE(r.ok());
  CHECK(r->chunk == 512);
  CHECK(r->prefill_chunks == 2);  // 599 tokens: 512 + 87
}

TEST_CASE("generation requests are checked before anything runs", "[run][generate]") {
  TinyModel m = load_tiny_model(64);
  const engine::CausalLmContract& c = m.contract;
  auto err = [&](engine::Request r, uint64_t capacity = 64) {
    Status s = engine::check_request(c, capacity, r);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().kind == ErrorKind::kUsage);
    return s.error().message;
  };
  CHECK(err(request({}, 1, 4)) == "the prompt is empty");
  CHECK(err(request({1}, 0, 4)) == "the number of ids to generate must be at least 1");
  CHECK(err(request({1}, 1, 0)) == "the prefill chunk must be at least 1 token");
  CHECK(err(request({1, 256}, 1, 4)) ==
        "prompt id 256 at index 1 is outside the vocabulary [0, 256) (the embedding's rows)");
  CHECK(err(request({-1}, 1, 4)) ==
        "prompt id -1 at index 0 is outside the vocabulary [0, 256) (the embedding's rows)");
  CHECK(err(request(std::vector<int64_t>(60, 1), 5, 4)) ==
        "prompt (60 tokens) + steps (5) = 65 tokens exceeds the capacity 64 tokens");
  CHECK(engine::check_request(c, 64, request(std::vector<int64_t>(60, 1), 4, 4)).ok());
  // The capacity itself is checked once, by the Model (check_capacity).
  Status cap = engine::check_capacity(c, 1040);
  REQUIRE_FALSE(cap.ok());
  CHECK(cap.error().message == "capacity 1040 tokens exceeds the block table (64 pages x 16 = 1024 tokens)");
  CHECK(engine::check_capacity(c, 0).error().message == "the capacity must be at least 1 token");
  CHECK(engine::check_capacity(c, 1024).ok());
}

TEST_CASE("stop ids outside the vocabulary are refused (issue 22 item 16)", "[run][generate]") {
  TinyModel m = load_tiny_model(64);
  const engine::CausalLmContract& c = m.contract;
  for (int64_t bad : {int64_t{-1}, int64_t{256}, int64_t{99999999999}}) {
    INFO("stop id " << bad);
    Status s = engine::check_request(c, 64, request({1, 2}, 4, 4, {7, bad}));
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().kind == ErrorKind::kUsage);
    CHECK(s.error().message ==
          "stop id " + std::to_string(bad) + " at index 1 is outside the vocabulary [0, 256)");
    // The engine refuses the request before anything runs.
    engine::Engine e(*m.model);
    CHECK_FALSE(e.add_request(request({1, 2}, 4, 4, {bad})).ok());
    CHECK(e.idle());
  }
  CHECK(engine::check_request(c, 64, request({1, 2}, 4, 4, {0, 255})).ok());
}

TEST_CASE("sampling parameters are checked; temperature > 0 samples on a plan that samples", "[run][generate]") {
  TinyModel m = load_tiny_model(64);
  auto err = [&](engine::SamplingParams p) {
    engine::Request r = request({1, 2}, 4, 4);
    r.sampling = p;
    Status s = engine::check_request(m.contract, 64, r);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().kind == ErrorKind::kUsage);
    return s.error().message;
  };
  CHECK(err({.temperature = -1.0f}) == "temperature -1 must be a finite number >= 0");
  CHECK(err({.temperature = NAN}) == "temperature nan must be a finite number >= 0");
  CHECK(err({.top_p = 0.0f}) == "top_p 0 must be in (0, 1]");
  CHECK(err({.top_p = 1.5f}) == "top_p 1.5 must be in (0, 1]");
  CHECK(err({.min_p = -0.25f}) == "min_p -0.25 must be in [0, 1]");
  engine::Request hot = request({1, 2}, 4, 4);
  hot.sampling = {.temperature = 0.5f, .top_k = 5, .top_p = 0.9f, .min_p = 0.1f, .seed = 7};
  CHECK(engine::check_request(m.contract, 64, hot).ok());  // refused before device sampling (sampling_test.cpp)
  engine::Request greedy = request({1, 2}, 4, 4);
  greedy.sampling = {.top_k = 5, .top_p = 0.9f, .min_p = 0.1f, .seed = 7};
  CHECK(engine::check_request(m.contract, 64, greedy).ok());
}

TEST_CASE("a step count near 2^64 exceeds the capacity instead of wrapping around", "[run][generate]") {
  TinyModel m = load_tiny_model(64);
  // 5 + (2^64 - 4) wraps to 1 <= 64 in u64: check_request must not pass it.
  Status s = engine::check_request(m.contract, 64, request({1, 2, 3, 4, 5}, UINT64_MAX - 3, 4));
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "prompt (5 tokens) + steps (18446744073709551612) exceeds the capacity 64 tokens");
  Status all = engine::check_request(m.contract, 64, request({1}, UINT64_MAX, 4));
  REQUIRE_FALSE(all.ok());
  CHECK(all.error().message == "prompt (1 tokens) + steps (18446744073709551615) exceeds the capacity 64 tokens");
}

namespace {

/// Records what generate reports as it happens.
struct Recorder : engine::GenerateObserver {
  std::vector<int64_t> tokens;
  std::vector<std::pair<uint64_t, uint64_t>> prefill;
  void on_prefill_progress(uint64_t done, uint64_t total) override { prefill.emplace_back(done, total); }
  void on_token(int64_t id) override { tokens.push_back(id); }
};

}  // namespace

TEST_CASE("the observer sees prefill progress per chunk and every generated id as it is produced", "[run][generate]") {
  TinyModel m = load_tiny_model();
  Recorder rec;
  auto r = run_generate(*m.model, request(kTinyPrompt, 7, 8), &rec);
  REQUIRE(r.ok());
  CHECK(rec.tokens == r->generated_ids);
  // 22 prompt tokens: chunks of 8, 8, 6 (the last through prefill_last).
  CHECK(rec.prefill == std::vector<std::pair<uint64_t, uint64_t>>{{8, 22}, {16, 22}, {22, 22}});
}

TEST_CASE("generation stops right after a stop id and keeps it as the last id", "[run][generate]") {
  auto full = generate_ids(kTinyPrompt, 10, 512);
  // Stop at the first id whose first occurrence is at step 3 or later, so
  // the run is shorter than 10 and longer than 1.
  size_t k = 3;
  while (std::find(full.begin(), full.begin() + static_cast<long>(k), full[k]) != full.begin() + static_cast<long>(k)) ++k;
  REQUIRE(k < full.size() - 1);
  TinyModel m = load_tiny_model();
  // A stop id that never occurs must not stop it (ids must be in the vocabulary).
  int64_t unused = 0;
  while (std::find(full.begin(), full.end(), unused) != full.end()) ++unused;
  auto r = run_generate(*m.model, request(kTinyPrompt, 10, 512, {unused, full[k]}));
  REQUIRE(r.ok());
  CHECK(r->stopped);
  CHECK(r->generated_ids == std::vector<int64_t>(full.begin(), full.begin() + static_cast<long>(k) + 1));
  CHECK(r->decode_steps == k);
  // Without stop ids, --steps ends it.
  auto all = run_generate(*m.model, request(kTinyPrompt, 10, 512));
  REQUIRE(all.ok());
  CHECK_FALSE(all->stopped);
  CHECK(all->generated_ids == full);
}

TEST_CASE("loading reports each phase's time and the weight upload's progress up to every weight byte",
          "[run][load]") {
  auto plan = load::PlanFile::open(env_path("KERN_TINY_PLAN"));
  REQUIRE(plan.ok());
  auto w = load::Safetensors::open(env_path("KERN_TINY_WEIGHTS"));
  REQUIRE(w.ok());
  load::LoadTimings timings;
  timings.kernels_ms = -1;  // poisoned: load must overwrite
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  load::LoadMonitor monitor;
  monitor.timings = &timings;
  monitor.on_weight_progress = [&calls](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  load::ExecutableOptions options;
  options.capacity_tokens = 256;
  auto exe = load::Executable::load(std::move(plan.value()), load::make_cpu_device(), &w.value(), options,
                                    &monitor);
  REQUIRE(exe.ok());
  CHECK(timings.kernels_ms >= 0);
  CHECK(timings.allocate_ms > 0);
  CHECK(timings.weights_ms > 0);
  REQUIRE(calls.size() >= 2);
  uint64_t total = calls.back().second;
  CHECK(calls.back().first == total);
  CHECK(timings.weight_bytes == total);
  for (size_t i = 1; i < calls.size(); ++i) CHECK(calls[i].first > calls[i - 1].first);
  CHECK(total > 250000);
}
