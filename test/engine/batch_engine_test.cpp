// The batched engine (kern-engine/batch_engine.h, docs/batching.md) on the
// tiny model and the cpu device: batch invariance (every request gets
// exactly the ids it gets alone through the batch-1 `decode`, in batches of
// 1 to 8 with others joining and leaving mid-flight, stop ids, max_tokens
// and aborts; seeded sampled requests beside greedy ones likewise),
// admission (a request that can never fit is refused, one that does not fit
// now waits for pages), no host write in the steady state (a join writes
// its row's sampling inputs only when they change), and the pure scheduler
// and page allocator.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "kern-engine/batch_engine.h"
#include "kern-engine/engine.h"
#include "kern-engine/page_allocator.h"
#include "kern-engine/scheduler.h"
#include "test/engine/run_until_idle.h"
#include "test/engine/tiny_model.h"

using namespace kern;
using namespace kern::test;

namespace {

std::vector<int64_t> prompt_of(uint64_t n, int64_t salt) {
  std::vector<int64_t> p(n);
  for (uint64_t i = 0; i < n; ++i) p[i] = (salt * 37 + static_cast<int64_t>(i) * 11 + 3) % 200;
  return p;
}

std::map<engine::RequestId, Outcome> run_all(engine::Engine& e, const std::function<void(int)>& before = {}) {
  return run_until_idle(e, before);
}

engine::Request make_request(engine::RequestId id, uint64_t prompt_len, uint64_t max_tokens,
                             std::vector<int64_t> stop = {}, uint64_t chunk = 512) {
  engine::Request r{id, prompt_of(prompt_len, static_cast<int64_t>(id)), max_tokens, std::move(stop), chunk};
  return r;
}

}  // namespace

TEST_CASE("the scheduler admits the longest FIFO prefix that fits the batch slots and the free pages",
          "[engine][batch][schedule]") {
  const std::vector<engine::WaitingEntry> q = {{1, 3}, {2, 2}, {3, 1}, {4, 1}};
  auto a = engine::schedule({8, 0, 10, q});
  CHECK(a.admit == std::vector<uint64_t>{1, 2, 3, 4});
  CHECK(a.pages == 7);
  a = engine::schedule({8, 0, 4, q});  // 3 + 2 > 4: the second waits, and so does everything behind it
  CHECK(a.admit == std::vector<uint64_t>{1});
  a = engine::schedule({3, 1, 10, q});  // 2 slots left
  CHECK(a.admit == std::vector<uint64_t>{1, 2});
  a = engine::schedule({2, 2, 10, q});
  CHECK(a.admit.empty());
  a = engine::schedule({8, 0, 2, q});  // the head does not fit now: nothing overtakes it
  CHECK(a.admit.empty());
}

TEST_CASE("the page allocator hands out the lowest free pages and refuses more than are free",
          "[engine][batch][pages]") {
  engine::PageAllocator p(6);
  auto a = p.allocate(2);
  REQUIRE(a.ok());
  CHECK(a.value() == std::vector<int32_t>{0, 1});
  auto b = p.allocate(3);
  REQUIRE(b.ok());
  CHECK(b.value() == std::vector<int32_t>{2, 3, 4});
  auto c = p.allocate(2);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message == "2 pages wanted, 1 of 6 free");
  CHECK(p.free_pages() == 1);
  p.release(a.value());
  p.release(a.value());  // a double release frees nothing twice
  CHECK(p.free_pages() == 3);
  auto d = p.allocate(3);
  REQUIRE(d.ok());
  CHECK(d.value() == std::vector<int32_t>{0, 1, 5});
  CHECK(engine::pages_for_tokens(16) == 1);
  CHECK(engine::pages_for_tokens(17) == 2);
  CHECK(engine::batch_bucket(1, 8) == 1);
  CHECK(engine::batch_bucket(3, 8) == 4);
  CHECK(engine::batch_bucket(5, 8) == 8);
  CHECK(engine::batch_bucket(5, 6) == 6);
}

TEST_CASE("every request gets its solo ids in batches of 1 to 8, with others joining, stopping and leaving",
          "[engine][batch][invariance]") {
  TinyModel tm = load_tiny_model(1024);
  engine::Model& m = *tm.model;
  REQUIRE(m.batch() != nullptr);
  REQUIRE(m.batch()->max_batch == 8);
  // Different prompt lengths (1 token, inside a page, across pages, several
  // prefill chunks), max_tokens and chunks.
  std::vector<engine::Request> reqs = {
      make_request(1, 1, 12),        make_request(2, 5, 20, {}, 4), make_request(3, 17, 9),
      make_request(4, 40, 15, {}, 16), make_request(5, 2, 30),        make_request(6, 33, 7, {}, 8),
      make_request(7, 9, 25),        make_request(8, 23, 18, {}, 5), make_request(9, 12, 14),
  };
  std::map<engine::RequestId, std::vector<int64_t>> solo;
  for (const auto& r : reqs) solo[r.id] = solo_ids(m, r);
  // Stop ids: request 7 stops on its 6th id, request 2 on its 4th (taken from the solo run).
  reqs[6].stop_ids = {solo[7][5]};
  reqs[1].stop_ids = {solo[2][3]};
  for (engine::RequestId id : {engine::RequestId{7}, engine::RequestId{2}}) {
    const auto& r = reqs[id - 1];
    solo[id] = solo_ids(m, r);
    CHECK(solo[id].size() < r.max_tokens);
  }
  for (const uint64_t max_batch : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{5}, uint64_t{8}}) {
    INFO("max_batch " << max_batch);
    engine::Engine e(m);
    REQUIRE(e.set_max_batch(max_batch).ok());
    // Half at once, the rest joining at different steps mid-flight.
    for (size_t i = 0; i < 5; ++i) REQUIRE(e.add_request(reqs[i]).ok());
    auto out = run_all(e, [&](int k) {
      if (k == 3) REQUIRE(e.add_request(reqs[5]).ok());
      if (k == 7) REQUIRE(e.add_request(reqs[6]).ok());
      if (k == 12) {
        REQUIRE(e.add_request(reqs[7]).ok());
        REQUIRE(e.add_request(reqs[8]).ok());
      }
    });
    for (const auto& r : reqs) {
      INFO("request " << r.id);
      CHECK(out[r.id].error.empty());
      CHECK(out[r.id].ids == solo[r.id]);
      CHECK(out[r.id].reason ==
            (solo[r.id].size() < r.max_tokens ? engine::FinishReason::kStop : engine::FinishReason::kLength));
    }
    REQUIRE((e.batch_engine() != nullptr || max_batch == 1));
    if (e.batch_engine() != nullptr) CHECK(e.batch_engine()->free_pages() == e.batch_engine()->pool_pages());
  }
}

TEST_CASE("an aborted sequence leaves the batch, frees its pages and the others keep their solo ids",
          "[engine][batch][abort]") {
  TinyModel tm = load_tiny_model(1024);
  engine::Model& m = *tm.model;
  const std::vector<engine::Request> reqs = {make_request(1, 10, 30), make_request(2, 20, 30),
                                             make_request(3, 3, 30)};
  std::map<engine::RequestId, std::vector<int64_t>> solo;
  for (const auto& r : reqs) solo[r.id] = solo_ids(m, r);
  engine::Engine e(m);
  REQUIRE(e.set_max_batch(4).ok());
  for (const auto& r : reqs) REQUIRE(e.add_request(r).ok());
  REQUIRE(e.add_request(make_request(4, 8, 5)).ok());
  auto out = run_all(e, [&](int k) {
    if (k == 6) e.abort(2);   // mid-decode
    if (k == 6) e.abort(99);  // unknown: ignored
    if (k == 0) e.abort(4);   // still waiting
  });
  CHECK(out[2].reason == engine::FinishReason::kAborted);
  CHECK(out[4].reason == engine::FinishReason::kAborted);
  CHECK(out[4].ids.empty());
  CHECK(std::equal(out[2].ids.begin(), out[2].ids.end(), solo[2].begin()));
  CHECK(out[1].ids == solo[1]);
  CHECK(out[3].ids == solo[3]);
  CHECK(e.batch_engine()->free_pages() == e.batch_engine()->pool_pages());
}

TEST_CASE("admission refuses a request that can never fit the KV pool and makes one that does not fit now wait",
          "[engine][batch][admission]") {
  TinyModel tm = load_tiny_model(60);  // a pool of 3 whole pages
  engine::Model& m = *tm.model;
  engine::Engine e(m);
  REQUIRE(e.set_max_batch(8).ok());
  REQUIRE(e.batch_engine()->pool_pages() == 3);
  // check_request bounds prompt + max_tokens by the capacity first.
  Status big = e.add_request(make_request(1, 40, 30));
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().kind == ErrorKind::kUsage);
  // Within the capacity (60 tokens) but 4 pages of 16: never fits the 3-page pool.
  Status never = e.add_request(make_request(1, 20, 40));
  REQUIRE_FALSE(never.ok());
  CHECK(never.error().message ==
        "the prompt (20 tokens) + max_tokens (40) need 4 KV pages of 16 tokens; the KV pool has 3 pages in all, "
        "so it can never fit");
  CHECK(e.admission(make_request(1, 20, 40)) == engine::Admission::kNever);
  CHECK(e.max_sequence_tokens() == 48);  // the pool's whole pages
  // Two requests of 2 pages each: the second waits for the first's pages.
  const engine::Request a = make_request(2, 10, 15), b = make_request(3, 20, 10);
  const auto solo_a = solo_ids(m, a), solo_b = solo_ids(m, b);
  CHECK(e.admission(a) == engine::Admission::kNow);
  CHECK(e.admission(b) == engine::Admission::kNow);
  REQUIRE(e.add_request(a).ok());
  CHECK(e.admission(b) == engine::Admission::kLater);  // behind a: 2 + 2 pages > 3
  CHECK(e.kv_pages().total == 3);
  CHECK(e.kv_pages().used == 0);  // reserved when admitted, by the next step
  REQUIRE(e.add_request(b).ok());
  uint64_t most_live = 0;
  std::map<engine::RequestId, Outcome> out;
  for (int k = 0; k < 500 && !e.idle(); ++k) {
    auto events = e.step();
    REQUIRE(events.ok());
    if (k == 0) CHECK(e.kv_pages().used == 2);
    most_live = std::max(most_live, e.batch_engine()->live_rows());
    for (const auto& ev : events.value()) out[ev.id].ids.insert(out[ev.id].ids.end(), ev.ids.begin(), ev.ids.end());
  }
  CHECK(most_live == 1);  // never both at once: 4 pages > 3
  CHECK(out[2].ids == solo_a);
  CHECK(out[3].ids == solo_b);
  CHECK(e.kv_pages().used == 0);
  // One sequence at a time: the capacity bounds a request; the next waits for the running one.
  engine::Engine one(m);
  CHECK(one.max_sequence_tokens() == 60);
  CHECK(one.admission(make_request(4, 40, 30)) == engine::Admission::kNever);
  CHECK(one.admission(a) == engine::Admission::kNow);
  REQUIRE(one.add_request(a).ok());
  CHECK(one.admission(b) == engine::Admission::kLater);
  REQUIRE(one.step().ok());
  CHECK(one.kv_pages().total == 4);  // ceil(60 / 16)
  CHECK(one.kv_pages().used == 2);   // a's 25 tokens
  CHECK(one.admission(b) == engine::Admission::kLater);
  run_all(one);
  CHECK(one.kv_pages().used == 0);
  CHECK(one.admission(b) == engine::Admission::kNow);
  // max_batch bounds.
  CHECK_FALSE(e.set_max_batch(9).ok());
  CHECK(e.set_max_batch(9).error().message == "max_batch 9 exceeds the plan's max_batch 8 (its 'batch' symbol's bound)");
  CHECK_FALSE(e.set_max_batch(0).ok());
}

TEST_CASE("the batched loop writes to the device only when the batch composition changes",
          "[engine][batch][traffic]") {
  // 1-token prompts: no prefill, with prefill_last in the plan or without
  // (CausalLmContract::prefill_last_for), the join alone (a reset of every
  // row once: 5 writes, then 5 for its row).
  const bool with_last = GENERATE(true, false);
  INFO((with_last ? "prefill_last" : "no prefill_last"));
  TinyModel tm = load_tiny_model(1024, nullptr, with_last ? "KERN_TINY_PLAN" : "KERN_TINY_PLAN_NO_PREFILL_LAST");
  engine::Model& m = *tm.model;
  engine::Engine e(m);
  REQUIRE(e.set_max_batch(4).ok());
  REQUIRE(e.add_request(make_request(1, 1, 40)).ok());
  REQUIRE(e.add_request(make_request(2, 1, 40)).ok());
  for (int k = 0; k < 4 && e.batch_engine()->live_rows() < 2; ++k) REQUIRE(e.step().ok());
  CHECK(e.batch_engine()->live_rows() == 2);
  CHECK(tm.exe->traffic().host_writes == 5 + 2 * 5);
  const uint64_t writes = tm.exe->traffic().host_writes;
  const uint64_t runs = tm.exe->traffic().program_runs;
  for (int k = 0; k < 20; ++k) REQUIRE(e.step().ok());
  CHECK(tm.exe->traffic().host_writes == writes);  // steady state: none
  CHECK(tm.exe->traffic().program_runs == runs + 20);
  // A third sequence joins: 5 writes for its row.
  REQUIRE(e.add_request(make_request(3, 1, 5)).ok());
  for (int k = 0; k < 3 && e.batch_engine()->live_rows() < 3; ++k) REQUIRE(e.step().ok());
  CHECK(e.batch_engine()->live_rows() == 3);
  CHECK(tm.exe->traffic().host_writes == writes + 5);
  run_all(e);
  // Each of the three left its row: 3 writes each.
  CHECK(tm.exe->traffic().host_writes == writes + 5 + 3 * 3);
}

TEST_CASE("a seeded request gets exactly its solo ids in batches of 2 to 8, beside greedy and other seeded ones",
          "[engine][batch][sampling][invariance]") {
  TinyModel tm = load_tiny_model(1024);
  engine::Model& m = *tm.model;
  REQUIRE(m.batch() != nullptr);
  REQUIRE(m.batch()->samples);
  auto sampled = [](engine::Request r, engine::SamplingParams p) {
    r.sampling = p;
    return r;
  };
  // Greedy and seeded rows with different temperatures and truncations; two
  // share a seed (their prompts differ); prompts of 1 to 33 tokens.
  std::vector<engine::Request> reqs = {
      make_request(1, 3, 14),
      sampled(make_request(2, 7, 20), {.temperature = 2.0f, .seed = 11}),
      sampled(make_request(3, 1, 16), {.temperature = 3.0f, .top_k = 20, .seed = 12}),
      sampled(make_request(4, 18, 12, {}, 5), {.temperature = 1.5f, .top_p = 0.8f, .seed = 13}),
      make_request(5, 25, 18, {}, 8),
      sampled(make_request(6, 9, 22), {.temperature = 2.5f, .min_p = 0.05f, .seed = 14}),
      sampled(make_request(7, 33, 10, {}, 16),
              {.temperature = 2.0f, .top_k = 40, .top_p = 0.9f, .min_p = 0.02f, .seed = 15}),
      sampled(make_request(8, 2, 15), {.temperature = 3.0f, .seed = 11}),
      sampled(make_request(9, 12, 25), {.temperature = 2.0f, .seed = 16}),
  };
  std::map<engine::RequestId, std::vector<int64_t>> solo;
  for (const auto& r : reqs) solo[r.id] = solo_ids(m, r);
  // The draws are real: each seeded request's solo ids differ from its greedy ids.
  for (const auto& r : reqs) {
    if (r.sampling.greedy()) continue;
    engine::Request greedy = r;
    greedy.sampling = {};
    INFO("request " << r.id);
    CHECK(solo_ids(m, greedy) != solo[r.id]);
  }
  // Request 9 stops on its 7th sampled id (taken from its solo run).
  reqs[8].stop_ids = {solo[9][6]};
  solo[9] = solo_ids(m, reqs[8]);
  REQUIRE(solo[9].size() < reqs[8].max_tokens);
  for (const uint64_t max_batch : {uint64_t{2}, uint64_t{3}, uint64_t{4}, uint64_t{8}}) {
    INFO("max_batch " << max_batch);
    engine::Engine e(m);
    REQUIRE(e.set_max_batch(max_batch).ok());
    for (size_t i = 0; i < 4; ++i) REQUIRE(e.add_request(reqs[i]).ok());
    auto out = run_all(e, [&](int k) {
      if (k == 2) REQUIRE(e.add_request(reqs[4]).ok());
      if (k == 5) REQUIRE(e.add_request(reqs[5]).ok());
      if (k == 9) {
        REQUIRE(e.add_request(reqs[6]).ok());
        REQUIRE(e.add_request(reqs[7]).ok());
      }
      if (k == 14) REQUIRE(e.add_request(reqs[8]).ok());
    });
    for (const auto& r : reqs) {
      INFO("request " << r.id);
      CHECK(out[r.id].error.empty());
      CHECK(out[r.id].ids == solo[r.id]);
    }
    CHECK(out[9].reason == engine::FinishReason::kStop);
    CHECK(e.batch_engine()->free_pages() == e.batch_engine()->pool_pages());
  }
}

TEST_CASE("a joining row writes its sampling inputs only when they differ from what the row holds",
          "[engine][batch][sampling][traffic]") {
  // On the plan without prefill_last, whose 1-token prompts join at once: the
  // joins' writes alone. (With prefill_last a prompt's last chunk also
  // writes row 0's inputs for its own draw and back: the seeded tests above.)
  TinyModel tm = load_tiny_model(1024, nullptr, "KERN_TINY_PLAN_NO_PREFILL_LAST");
  engine::Model& m = *tm.model;
  engine::Engine e(m);
  REQUIRE(e.set_max_batch(4).ok());
  engine::Request hot = make_request(1, 1, 30);
  hot.sampling = {.temperature = 2.0f, .top_k = 10, .seed = 7};
  REQUIRE(e.add_request(hot).ok());
  REQUIRE(e.add_request(make_request(2, 1, 30)).ok());
  // The reset (5), two joins (5 each) and the sampled row's inputs (5); the greedy row already holds zeros.
  REQUIRE(e.step().ok());
  CHECK(e.batch_engine()->live_rows() == 2);
  const uint64_t writes = tm.exe->traffic().host_writes;
  CHECK(writes == 5 + 2 * 5 + 5);
  for (int k = 0; k < 15; ++k) REQUIRE(e.step().ok());
  CHECK(tm.exe->traffic().host_writes == writes);  // steady state with a sampled row: none
  run_all(e);
  CHECK(tm.exe->traffic().host_writes == writes + 2 * 3);  // the leaves reset nothing of the sampling inputs
  // Row 0 still holds the sampled parameters: the same parameters there again write nothing more than the
  // join, and a greedy request there writes zeros back (5) and gets its greedy solo ids.
  uint64_t before = tm.exe->traffic().host_writes;
  hot.id = 3;
  REQUIRE(e.add_request(hot).ok());
  REQUIRE(e.step().ok());
  CHECK(tm.exe->traffic().host_writes == before + 5);
  run_all(e);
  before = tm.exe->traffic().host_writes;
  const engine::Request greedy = make_request(4, 1, 6);
  REQUIRE(e.add_request(greedy).ok());
  auto joined = e.step();
  REQUIRE(joined.ok());
  CHECK(tm.exe->traffic().host_writes == before + 5 + 5);
  std::vector<int64_t> ids;
  for (const engine::TokenEvent& ev : joined.value()) ids.insert(ids.end(), ev.ids.begin(), ev.ids.end());
  const auto rest = run_all(e);
  ids.insert(ids.end(), rest.at(4).ids.begin(), rest.at(4).ids.end());
  CHECK(ids == solo_ids(m, greedy));
}

TEST_CASE("max_batch 1 and the batched mode sample the same seeded ids", "[engine][batch][sampling]") {
  TinyModel tm = load_tiny_model(60);
  engine::Request r = make_request(1, 5, 12);
  r.sampling = {.temperature = 0.8f, .top_p = 0.95f, .seed = 42};
  const auto solo = solo_ids(*tm.model, r);
  engine::Engine e(*tm.model);
  REQUIRE(e.set_max_batch(4).ok());
  REQUIRE(e.add_request(r).ok());
  CHECK(run_all(e)[1].ids == solo);
  REQUIRE(e.set_max_batch(1).ok());
  r.id = 2;
  REQUIRE(e.add_request(r).ok());
  CHECK(run_all(e)[2].ids == solo);  // after the batched mode, row 0 of the sampling inputs is right again
}
