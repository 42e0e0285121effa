// The step-driven engine (kern-engine/engine.h) on the tiny models and the
// cpu device: what the blocking generate() could not show. Two requests on
// one Engine run one after the other with the ids each gives alone; abort
// mid-prefill and mid-decode leaves the engine idle, every queued step
// drained and the next request's ids unchanged; a failing read-back wait is
// drained (and a failing drain is reported, not dropped); an injected clock
// makes every timing field exact; a speculative request followed by a plain
// one on the same Model gives the plain ids (no stale cu_seqlens_q); the
// capacity is bounded by the RoPE table.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>

#include "kern-engine/engine.h"
#include "kern-engine/generate.h"
#include "kern-engine/request.h"
#include "test/engine/tiny_model.h"

using namespace kern;
using namespace kern::test;

namespace {

/// A cpu device whose asynchronous readbacks are tracked per slot (a slot is
/// pending from read_async until a successful wait_read) and whose waits
/// can be made to fail: wait number k (1-based) fails when k is in `fail`.
class ReadbackDevice final : public load::Device {
 public:
  struct State {
    std::array<bool, load::kReadbackSlots> pending{};
    uint64_t reads = 0, waits = 0;
    std::vector<uint64_t> fail;  ///< wait numbers that fail
  };
  explicit ReadbackDevice(std::shared_ptr<State> st) : st_(std::move(st)) {}
  std::string name() const override { return "readback cpu"; }
  Result<load::DevicePtr> allocate(uint64_t s, uint64_t a) override { return inner_->allocate(s, a); }
  Status free(load::DevicePtr p) override { return inner_->free(p); }
  Status copy_to_device(load::DevicePtr d, const void* s, uint64_t n) override { return inner_->copy_to_device(d, s, n); }
  Status copy_to_host(void* d, load::DevicePtr s, uint64_t n) override { return inner_->copy_to_host(d, s, n); }
  Status load_kernels(const load::PlanFile& plan, const std::string& dir) override {
    return inner_->load_kernels(plan, dir);
  }
  Status launch(uint32_t step, const load::LaunchDims& dims, void** params) override {
    return inner_->launch(step, dims, params);
  }
  Status synchronize() override { return {}; }
  Status read_async(uint32_t slot, load::DevicePtr src, uint64_t size_bytes) override {
    ++st_->reads;
    if (slot < st_->pending.size()) st_->pending[slot] = true;
    return Device::read_async(slot, src, size_bytes);
  }
  Result<std::span<const uint8_t>> wait_read(uint32_t slot) override {
    const uint64_t k = ++st_->waits;
    if (std::find(st_->fail.begin(), st_->fail.end(), k) != st_->fail.end())
      return make_error(ErrorKind::kDevice, "injected failure of wait " + std::to_string(k));
    if (slot < st_->pending.size()) st_->pending[slot] = false;
    return Device::wait_read(slot);
  }

 private:
  std::unique_ptr<load::Device> inner_ = load::make_cpu_device();
  std::shared_ptr<State> st_;
};

/// Steps `e` until idle; the events of each request, in order.
std::map<engine::RequestId, std::vector<engine::TokenEvent>> run_to_idle(engine::Engine& e,
                                                                         std::vector<engine::RequestId>* order = nullptr) {
  std::map<engine::RequestId, std::vector<engine::TokenEvent>> out;
  for (int guard = 0; !e.idle() && guard < 100000; ++guard) {
    auto events = e.step();
    REQUIRE(events.ok());
    for (auto& ev : *events) {
      if (order != nullptr) order->push_back(ev.id);
      out[ev.id].push_back(std::move(ev));
    }
  }
  REQUIRE(e.idle());
  return out;
}

std::vector<int64_t> ids_of(const std::vector<engine::TokenEvent>& events) {
  std::vector<int64_t> ids;
  for (const auto& ev : events) ids.insert(ids.end(), ev.ids.begin(), ev.ids.end());
  return ids;
}

std::vector<int64_t> alone(const std::vector<int64_t>& prompt, uint64_t steps, uint64_t chunk, bool sync = false) {
  TinyModel m = load_tiny_model();
  auto r = run_generate(*m.model, request(prompt, steps, chunk, {}, sync));
  if (!r.ok()) FAIL(r.error().message);
  return r->generated_ids;
}

engine::Request with_id(engine::Request r, engine::RequestId id) {
  r.id = id;
  return r;
}

/// The tiny DSpark plan with deterministic random weights (no file).
TinyModel load_dspark() { return load_tiny_model(0, nullptr, "KERN_TINY_DSPARK_PLAN", nullptr, true); }

}  // namespace

TEST_CASE("two requests on one engine run one after the other, each with the ids it gives alone", "[engine]") {
  const auto a_alone = alone(kTinyPrompt, 7, 4);
  const auto b_alone = alone({100, 7, 7}, 5, 512, true);
  TinyModel m = load_tiny_model();
  engine::Engine e(*m.model);
  REQUIRE(e.add_request(with_id(request(kTinyPrompt, 7, 4), 1)).ok());
  REQUIRE(e.add_request(with_id(request({100, 7, 7}, 5, 512, {}, true), 2)).ok());
  // The same id twice is refused while the first is queued.
  CHECK_FALSE(e.add_request(with_id(request({1}, 1), 2)).ok());
  std::vector<engine::RequestId> order;
  auto events = run_to_idle(e, &order);
  CHECK(ids_of(events[1]) == a_alone);
  CHECK(ids_of(events[2]) == b_alone);
  // The second waited: every event of request 1 came before the first of request 2.
  const auto first_b = std::find(order.begin(), order.end(), engine::RequestId{2});
  CHECK(std::find(first_b, order.end(), engine::RequestId{1}) == order.end());
  // One event per prefill chunk (22 prompt tokens in chunks of 4: 6), then
  // one per id; the last chunk's event (prefill_last) carries the first id.
  CHECK(events[1].size() == 6 + 6);
  CHECK(events[1][0].prefilled == 4u);
  CHECK(events[1][0].prefill_total == 22);
  CHECK(events[1][5].prefilled == 22u);
  CHECK(events[1][5].ids == std::vector<int64_t>{a_alone[0]});
  REQUIRE(events[1].back().finished == engine::FinishReason::kLength);
  REQUIRE(events[1].back().result != nullptr);
  CHECK(events[1].back().result->generated_ids == a_alone);
  CHECK(events[2].back().result->sync);
}

TEST_CASE("abort mid-prefill leaves the engine idle and the next request unchanged", "[engine]") {
  const auto expected = alone(kTinyPrompt, 6, 4);
  TinyModel m = load_tiny_model();
  engine::Engine e(*m.model);
  REQUIRE(e.add_request(with_id(request(kTinyPrompt, 6, 4), 7)).ok());
  auto first = e.step();  // admission + the first chunk
  REQUIRE(first.ok());
  REQUIRE(first->size() == 1);
  CHECK((*first)[0].prefilled == 4u);
  CHECK_FALSE((*first)[0].finished);
  e.abort(7);
  CHECK_FALSE(e.idle());  // the abort is reported by the next step
  auto ended = e.step();
  REQUIRE(ended.ok());
  REQUIRE(ended->size() == 1);
  CHECK((*ended)[0].id == 7);
  CHECK((*ended)[0].finished == engine::FinishReason::kAborted);
  CHECK_FALSE((*ended)[0].error);
  CHECK(e.idle());
  CHECK(m.model->runner().in_flight() == 0);
  auto again = engine::generate(e, request(kTinyPrompt, 6, 4));
  REQUIRE(again.ok());
  CHECK(again->generated_ids == expected);
}

TEST_CASE("abort mid-decode drains every queued step; the engine is reusable", "[engine]") {
  const auto expected = alone(kTinyPrompt, 9, 8);
  auto st = std::make_shared<ReadbackDevice::State>();
  TinyModel m = load_tiny_model(0, std::make_unique<ReadbackDevice>(st));
  engine::Engine e(*m.model);
  REQUIRE(e.add_request(with_id(request(kTinyPrompt, 9, 8), 3)).ok());
  std::vector<int64_t> got;
  while (got.size() < 3) {
    auto events = e.step();
    REQUIRE(events.ok());
    for (const auto& ev : *events) got.insert(got.end(), ev.ids.begin(), ev.ids.end());
  }
  CHECK(m.model->runner().in_flight() == 1);  // the lookahead's next step is queued
  e.abort(3);
  REQUIRE(e.drain().ok());
  CHECK(m.model->runner().in_flight() == 0);
  auto ended = e.step();
  REQUIRE(ended.ok());
  REQUIRE(ended->size() == 1);
  CHECK((*ended)[0].finished == engine::FinishReason::kAborted);
  CHECK(e.idle());
  CHECK(std::vector<int64_t>(expected.begin(), expected.begin() + 3) == got);
  for (bool pending : st->pending) CHECK_FALSE(pending);  // every readback was waited for
  CHECK(st->waits == st->reads);
  // Reusable: a waiting request aborted before it ran is reported too.
  REQUIRE(e.add_request(with_id(request(kTinyPrompt, 9, 8), 4)).ok());
  REQUIRE(e.add_request(with_id(request({1, 2}, 3), 5)).ok());
  e.abort(5);
  auto events = run_to_idle(e);
  CHECK(ids_of(events[4]) == expected);
  REQUIRE(events[5].size() == 1);
  CHECK(events[5][0].finished == engine::FinishReason::kAborted);
}

TEST_CASE("a failing read-back wait ends the request and drains its queued steps", "[engine]") {
  // Waits 1 and 2 are the first two ids' (lookahead 2: steps 0 and 1 queued
  // before the first wait); wait 3 (step 2's token) fails.
  auto st = std::make_shared<ReadbackDevice::State>();
  st->fail = {3};
  TinyModel m = load_tiny_model(0, std::make_unique<ReadbackDevice>(st));
  engine::Engine e(*m.model);
  auto r = engine::generate(e, request(kTinyPrompt, 9, 512));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kDevice);
  CHECK(r.error().message == "decode at position 23: injected failure of wait 3");
  CHECK(e.idle());
  CHECK(m.model->runner().in_flight() == 0);
  // The failed step was not forgotten: its slot and the step behind it were waited for.
  for (bool pending : st->pending) CHECK_FALSE(pending);
  // The engine and model still work.
  st->fail.clear();
  auto again = engine::generate(e, request(kTinyPrompt, 9, 512));
  REQUIRE(again.ok());
  CHECK(again->generated_ids == alone(kTinyPrompt, 9, 512));
}

TEST_CASE("a failing drain after a failed step is reported with it, not dropped", "[engine]") {
  // Wait 3 fails (step 2's token), then wait 4 (the drain's re-wait of step 2).
  auto st = std::make_shared<ReadbackDevice::State>();
  st->fail = {3, 4};
  TinyModel m = load_tiny_model(0, std::make_unique<ReadbackDevice>(st));
  engine::Engine e(*m.model);
  auto r = engine::generate(e, request(kTinyPrompt, 9, 512));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("decode at position 23: injected failure of wait 3"));
  CHECK_THAT(r.error().message,
             Catch::Contains("decode at position 23 (a discarded step): injected failure of wait 4"));
  CHECK(m.model->runner().in_flight() == 0);
  CHECK(e.idle());
}

TEST_CASE("an injected clock makes prefill, decode and round timings exact", "[engine]") {
  // Every read of the clock advances it by 1 ms.
  auto make_clock = [] {
    auto t = std::make_shared<engine::Clock::time_point>();
    return [t] { return *t += std::chrono::milliseconds(1); };
  };
  TinyModel m = load_tiny_model();
  for (bool sync : {false, true}) {
    INFO((sync ? "sync" : "async"));
    engine::Engine e(*m.model, make_clock());
    auto r = engine::generate(e, request(kTinyPrompt, 5, 8, {}, sync));
    REQUIRE(r.ok());
    // t0 at admission (1 ms), the first id read at 2 ms, the next 4 at 3..6 ms.
    CHECK(r->prefill_ms == 1.0);
    CHECK(r->decode_ms == 4.0);
    CHECK(r->decode_steps == 4);
    // Asynchronous: the second step was issued with the first, before the
    // window opened, so 3 steps' work lies in the 4 ms (issue 25 item 4).
    CHECK(r->decode_steps_timed == (sync ? 4 : 3));
    CHECK(r->prefill_chunks == 3);
  }
  // --steps 2 and 1: the asynchronous loop times no step; the synchronous one times its one.
  for (uint64_t steps : {1, 2}) {
    for (bool sync : {false, true}) {
      INFO("steps " << steps << (sync ? " sync" : " async"));
      engine::Engine e(*m.model, make_clock());
      auto r = engine::generate(e, request(kTinyPrompt, steps, 8, {}, sync));
      REQUIRE(r.ok());
      CHECK(r->decode_steps == steps - 1);
      CHECK(r->decode_steps_timed == (sync ? steps - 1 : 0));
    }
  }
  TinyModel d = load_dspark();
  engine::Engine e(*d.model, make_clock());
  engine::Request spec = request(kTinyPrompt, 9, 8);
  spec.speculative = true;
  auto r = engine::generate(e, spec);
  REQUIRE(r.ok());
  REQUIRE(r->spec);
  // Three chunks, each precompute read twice (1 ms each); then the first id.
  CHECK(r->spec->prompt_precompute_ms == 3.0);
  CHECK(r->prefill_ms == 7.0);  // t0 at 1 ms; 6 reads in prefill; the first id at 8 ms
  REQUIRE_FALSE(r->spec->rounds.empty());
  for (size_t i = 0; i < r->spec->rounds.size(); ++i) {
    const engine::SpecRound& round = r->spec->rounds[i];
    CHECK(round.draft_ms == 1.0);
    CHECK(round.verify_ms == 1.0);
    const bool last = i + 1 == r->spec->rounds.size();
    CHECK(round.precompute_ms == (last ? 0.0 : 1.0));
  }
  // Every round reads its ids back before the next is issued: all timed.
  CHECK(r->decode_steps == 8);
  CHECK(r->decode_steps_timed == 8);
}

TEST_CASE("speculative and plain requests share one model runner: ids equal plain greedy both ways", "[engine]") {
  TinyModel d = load_dspark();
  engine::Engine e(*d.model);
  const auto plain_first = engine::generate(e, request(kTinyPrompt, 10, 8));
  REQUIRE(plain_first.ok());
  engine::Request spec = request(kTinyPrompt, 10, 8);
  spec.speculative = true;
  auto s = engine::generate(e, spec);
  REQUIRE(s.ok());
  CHECK(s->generated_ids == plain_first->generated_ids);
  // After the rounds wrote cu_seqlens_q = [0, block], a plain decode (async
  // and sync) must not reuse it (issue 22 item 2: "cu_seqlens_q is [0, 4]").
  for (bool sync : {false, true}) {
    auto p = engine::generate(e, request({kTinyPrompt[0]}, 8, 8, {}, sync));
    REQUIRE(p.ok());
    auto fresh_model = load_dspark();
    auto fresh = run_generate(*fresh_model.model, request({kTinyPrompt[0]}, 8, 8, {}, sync));
    REQUIRE(fresh.ok());
    CHECK(p->generated_ids == fresh->generated_ids);
    REQUIRE(engine::generate(e, spec).ok());
  }
  // A speculative request on a model without the contract is refused.
  TinyModel plain = load_tiny_model();
  engine::Engine pe(*plain.model);
  Status refused = pe.add_request(spec);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message == "speculative decoding needs a model loaded with its speculative contract");
}

TEST_CASE("the capacity is bounded by the RoPE table's rows (issue 22 item 3)", "[engine]") {
  auto plan = load::PlanFile::open(env_path("KERN_ROPE17_PLAN"));
  REQUIRE(plan.ok());
  auto c = engine::resolve_causal_lm_contract(plan.value());
  REQUIRE(c.ok());
  CHECK(c->rope_positions == 17);
  CHECK(c->block_table_pages == 2);  // 32 tokens of block table
  CHECK(c->max_capacity() == 17);
  CHECK(engine::default_capacity(*c) == 17);
  Status over = engine::check_capacity(*c, 18);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message ==
        "capacity 18 tokens exceeds the RoPE table (17 positions: rope.cos_sin_cache rows, the model's "
        "max_position_embeddings)");
  CHECK(engine::check_capacity(*c, 17).ok());
  // Loaded by the engine, the Model's capacity is 17 and decoding to its last position works.
  engine::ModelPlan mp{std::move(plan.value()), *c, std::nullopt, std::nullopt, 0};
  engine::ModelConfig config;
  config.device = load::DeviceChoice::kCpu;
  config.random_weights_seed = 1;
  auto model = engine::Model::load(std::move(mp), config);
  if (!model.ok()) FAIL(model.error().message);
  CHECK((*model)->capacity() == 17);
  engine::Engine e(**model);
  auto full = engine::generate(e, request({1, 2}, 15));
  if (!full.ok()) FAIL(full.error().message);
  CHECK(full->generated_ids.size() == 15);
  Status past = e.add_request(request({1, 2}, 16));
  REQUIRE_FALSE(past.ok());
  CHECK(past.error().message == "prompt (2 tokens) + steps (16) = 18 tokens exceeds the capacity 17 tokens");
  // A larger capacity is refused at load.
  auto plan2 = engine::open_model_plan(env_path("KERN_ROPE17_PLAN"));
  REQUIRE(plan2.ok());
  config.capacity = 32;
  auto big = engine::Model::load(std::move(plan2.value()), config);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message.rfind("capacity 32 tokens exceeds the RoPE table (17 positions", 0) == 0);
}

