// The prefix cache (kern-engine/page_allocator.h, docs/serving.md "Prefix
// caching") on the tiny model and the cpu device: the page allocator's
// holds, keys and eviction order; and batch invariance with the cache on:
// every request gets the ids it gets alone with the cache off (greedy and
// seeded), with hits at page boundaries and inside a page, eviction forced
// by a small pool, and requests sharing a prefix in one batch.
#include <catch2/catch.hpp>

#include <map>

#include "kern-engine/batch_engine.h"
#include "kern-engine/engine.h"
#include "kern-engine/page_allocator.h"
#include "test/engine/run_until_idle.h"
#include "test/engine/tiny_model.h"

using namespace kern;
using namespace kern::test;

namespace {

std::vector<int64_t> block_of(int64_t salt) {
  std::vector<int64_t> b(engine::kKvBlockTokens);
  for (size_t i = 0; i < b.size(); ++i) b[i] = (salt * 31 + static_cast<int64_t>(i) * 7 + 1) % 200;
  return b;
}

/// A prompt of `n` tokens: the shared prefix `base` (cut or extended with `salt`'s tokens).
std::vector<int64_t> prompt_from(const std::vector<int64_t>& base, uint64_t n, int64_t salt) {
  std::vector<int64_t> p(base.begin(), base.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(n, base.size())));
  for (uint64_t i = p.size(); i < n; ++i) p.push_back((salt * 13 + static_cast<int64_t>(i) * 5 + 2) % 200);
  return p;
}

/// Steps `e` until idle, adding request i of `rs` before step `at[i]` (all
/// before the first step when `at` is empty); no request may fail.
std::map<engine::RequestId, Outcome> run_requests(engine::Engine& e, const std::vector<engine::Request>& rs,
                                                  const std::vector<int>& at = {}) {
  size_t added = 0;
  auto out = run_until_idle(
      e, [&](int k) {
        while (added < rs.size() && (at.empty() || at[added] <= k)) REQUIRE(e.add_request(rs[added++]).ok());
      },
      [&] { return added < rs.size(); });
  REQUIRE(added == rs.size());
  for (const auto& [id, o] : out) {
    INFO("request " << id);
    CHECK(o.error.empty());
  }
  return out;
}

engine::Request req(engine::RequestId id, std::vector<int64_t> prompt, uint64_t max_tokens, uint64_t chunk = 512) {
  engine::Request r;
  r.id = id;
  r.prompt_ids = std::move(prompt);
  r.max_tokens = max_tokens;
  r.chunk = chunk;
  return r;
}

}  // namespace

TEST_CASE("the page allocator keys full pages by their prefix, shares them and evicts the least recently released",
          "[engine][prefix]") {
  engine::PageAllocator p(4);
  const auto b0 = block_of(0), b1 = block_of(1), b2 = block_of(2);
  auto a = p.allocate(2);
  REQUIRE(a.ok());
  auto k0 = p.publish(0, b0, (*a)[0]);
  REQUIRE(k0.ok());
  auto k1 = p.publish(*k0, b1, (*a)[1]);
  REQUIRE(k1.ok());
  CHECK(p.cached_pages() == 2);
  // A chain of two blocks matches both pages; the same block after another prefix matches nothing.
  std::vector<int64_t> tokens = b0;
  tokens.insert(tokens.end(), b1.begin(), b1.end());
  tokens.push_back(5);
  auto hit = p.match(tokens, 8);
  CHECK(hit.pages == *a);
  CHECK(hit.key == *k1);
  CHECK(p.match(tokens, 1).pages == std::vector<int32_t>{(*a)[0]});
  CHECK(p.match(b1, 8).pages.empty());
  std::vector<int64_t> other = b0;
  other.insert(other.end(), b2.begin(), b2.end());
  CHECK(p.match(other, 8).pages.size() == 1);
  // A block cached already keeps its page; the duplicate stays unkeyed.
  auto dup = p.allocate(1);
  REQUIRE(dup.ok());
  auto again = p.publish(0, b0, (*dup)[0]);
  REQUIRE(again.ok());
  CHECK(*again == *k0);
  CHECK(p.cached_pages() == 2);
  REQUIRE_FALSE(p.publish(0, b0, (*a)[0]).ok());  // already keyed
  REQUIRE_FALSE(p.publish(0, std::vector<int64_t>(3, 1), (*dup)[0]).ok());  // not a block
  // Shared: held twice, still held after one release.
  p.retain(hit.pages);
  CHECK(p.holds((*a)[0]) == 2);
  p.release(*a);
  CHECK(p.holds((*a)[0]) == 1);
  CHECK(p.free_pages() == 1);
  // Released last page first: both cached, free to take, the last page evicted first.
  std::vector<int32_t> reversed = {(*a)[1], (*a)[0]};
  p.release(reversed);
  p.release(*dup);  // unkeyed: free
  CHECK(p.free_pages() == 4);
  CHECK(p.evictable_pages() == 2);
  auto two = p.allocate(2);  // page 3 is free, then the oldest cached page (b1's)
  REQUIRE(two.ok());
  CHECK(*two == std::vector<int32_t>{(*dup)[0], 3});
  CHECK(p.evictions() == 0);
  auto third = p.allocate(1);
  REQUIRE(third.ok());
  CHECK(*third == std::vector<int32_t>{(*a)[1]});
  CHECK(p.evictions() == 1);
  CHECK(p.match(tokens, 8).pages == std::vector<int32_t>{(*a)[0]});  // b0 stays, b1 is gone
  auto over = p.allocate(2);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message == "2 pages wanted, 1 of 4 free (1 of them cached)");
}

TEST_CASE("with the prefix cache every request gets its ids alone without it; later requests map the shared pages",
          "[engine][prefix][invariance]") {
  TinyModel m = load_tiny_model(1024);
  std::vector<int64_t> base;
  for (int64_t s = 0; s < 6; ++s) {
    auto b = block_of(s + 10);
    base.insert(base.end(), b.begin(), b.end());
  }
  // Prompts sharing 0 to 96 tokens of `base`: cuts at page boundaries
  // (32, 48, 64) and inside pages (40, 57), a fully cached prompt (49 =
  // 3 pages + 1: only its last token runs; 48: its last page runs again),
  // chunks of 8 and 5 (the cuts keep their multiples after a hit).
  struct Case {
    uint64_t shared, n, max_tokens, chunk;
  };
  const std::vector<Case> cases = {{64, 70, 6, 512}, {32, 40, 5, 8},  {40, 45, 7, 5},   {57, 80, 4, 512},
                                   {48, 49, 6, 512}, {48, 48, 5, 8},  {0, 20, 6, 512},  {96, 96, 3, 16},
                                   {64, 64, 8, 512}, {16, 33, 5, 512}};
  std::vector<engine::Request> rs;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    std::vector<int64_t> p = prompt_from(base, c.shared, static_cast<int64_t>(i) + 1);
    p = prompt_from(p, c.n, static_cast<int64_t>(i) + 100);
    rs.push_back(req(i + 1, p, c.max_tokens, c.chunk));
  }
  // A seeded request sharing the prefix too.
  engine::Request seeded = req(50, prompt_from(base, 75, 7), 8);
  seeded.sampling = {.temperature = 1.5f, .top_p = 0.9f, .seed = 11};
  rs.push_back(seeded);
  std::map<engine::RequestId, std::vector<int64_t>> solo;
  for (const auto& r : rs) solo[r.id] = solo_ids(*m.model, r);

  SECTION("one after another (max_batch 1): each maps the pages the earlier ones left cached") {
    engine::Engine e(*m.model);
    REQUIRE(e.set_max_batch(1, true).ok());
    for (const auto& r : rs) {
      auto out = run_requests(e, {r});
      INFO("request " << r.id);
      CHECK(out[r.id].ids == solo[r.id]);
    }
    // Seen again, a prompt maps all its full pages before its last token.
    for (const auto& r : rs) {
      auto out = run_requests(e, {r});
      INFO("request " << r.id << " again");
      CHECK(out[r.id].ids == solo[r.id]);
      CHECK(out[r.id].cached_tokens == (r.prompt_ids.size() - 1) / 16 * 16);
    }
    CHECK(e.kv_pages().used == 0);
    CHECK(e.kv_pages().cached > 0);
  }
  SECTION("in one batch of 4, joining at different steps: shared pages are mapped while their owner runs") {
    engine::Engine e(*m.model);
    REQUIRE(e.set_max_batch(4, true).ok());
    std::vector<int> at;
    for (size_t i = 0; i < rs.size(); ++i) at.push_back(static_cast<int>(i) * 3);
    auto out = run_requests(e, rs, at);
    uint64_t hits = 0;
    for (const auto& r : rs) {
      INFO("request " << r.id);
      CHECK(out[r.id].ids == solo[r.id]);
      hits += out[r.id].cached_tokens;
    }
    CHECK(hits > 0);
  }
  SECTION("a pool of 12 pages: admissions evict cached pages, and nothing waits while pages are evictable") {
    TinyModel small = load_tiny_model(192);
    engine::Engine e(*small.model);
    REQUIRE(e.set_max_batch(2, true).ok());
    for (int round = 0; round < 2; ++round) {
      auto out = run_requests(e, rs);
      for (const auto& r : rs) {
        INFO("round " << round << " request " << r.id);
        CHECK(out[r.id].ids == solo[r.id]);
      }
    }
    CHECK(e.kv_pages().evictions > 0);
    CHECK(e.kv_pages().used == 0);
    // Every cached page counts as free: a request needing the whole pool is admitted at once.
    CHECK(e.admission(req(99, prompt_from(base, 100, 3), 92)) == engine::Admission::kNow);
  }
}

TEST_CASE("a generated reply's full pages stay cached: the next turn of a conversation maps them",
          "[engine][prefix]") {
  TinyModel m = load_tiny_model(1024);
  engine::Engine e(*m.model);
  REQUIRE(e.set_max_batch(1, true).ok());
  const std::vector<int64_t> turn1 = prompt_from({}, 30, 4);
  auto first = run_requests(e, {req(1, turn1, 20)});
  REQUIRE(first[1].ids.size() == 20);
  CHECK(first[1].cached_tokens == 0);
  // History: the prompt, the reply and a new message (49 + 10 tokens).
  std::vector<int64_t> turn2 = turn1;
  turn2.insert(turn2.end(), first[1].ids.begin(), first[1].ids.end());
  for (int i = 0; i < 10; ++i) turn2.push_back(60 + i);
  auto second = run_requests(e, {req(2, turn2, 4)});
  // Positions [0, 49) were written (the last id never was): 3 full pages.
  CHECK(second[2].cached_tokens == 48);
  CHECK(second[2].ids.size() == 4);
}

TEST_CASE("the next turn of a conversation, mapping its reply's pages, gets the ids it gets alone without the cache",
          "[engine][prefix][invariance]") {
  // A reply's KV is written by decode, whose kernels round differently
  // from prefill's; the engine prefills a finished reply's full pages again
  // before it keys them, so a later prompt maps what a cold prefill writes.
  TinyModel m = load_tiny_model(1024);
  struct Case {
    uint64_t prompt, reply, chunk;
    bool seeded;
  };
  // Replies ending inside a page, on a page boundary (30 + 18 = 48 written:
  // the last id is never fed), spanning several pages; chunks of 8 and 512.
  const std::vector<Case> cases = {{30, 20, 512, false}, {30, 19, 8, false}, {17, 40, 512, true},
                                   {31, 34, 8, true},    {5, 12, 512, false}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO("case " << i);
    engine::Engine e(*m.model);
    REQUIRE(e.set_max_batch(2, true).ok());
    engine::Request first = req(1, prompt_from({}, c.prompt, static_cast<int64_t>(i) + 20), c.reply, c.chunk);
    if (c.seeded) first.sampling = {.temperature = 1.2f, .top_p = 0.95f, .seed = 5 + i};
    auto one = run_requests(e, {first});
    REQUIRE(one[1].ids.size() == c.reply);
    std::vector<int64_t> history = first.prompt_ids;
    history.insert(history.end(), one[1].ids.begin(), one[1].ids.end());
    for (int k = 0; k < 7; ++k) history.push_back(70 + k + static_cast<int64_t>(i));
    engine::Request second = req(2, history, 9, c.chunk);
    second.sampling = first.sampling;
    auto two = run_requests(e, {second});
    // Every full page of the prompt and the fed reply ids is mapped.
    CHECK(two[2].cached_tokens == (c.prompt + c.reply - 1) / 16 * 16);
    CHECK(two[2].ids == solo_ids(*m.model, second));
  }
}

TEST_CASE("a pending re-prefill yields its pages to a request that needs them", "[engine][prefix]") {
  // With prefill_last the last prompt token's KV is prefill's: decode writes
  // from position n; without it (an older plan) from n - 1.
  const bool with_last = GENERATE(true, false);
  INFO((with_last ? "prefill_last" : "no prefill_last"));
  const uint64_t back = with_last ? 0 : 1;
  TinyModel m = load_tiny_model(192, nullptr, with_last ? "KERN_TINY_PLAN" : "KERN_TINY_PLAN_NO_PREFILL_LAST");  // 12 pages
  engine::Engine e(*m.model);
  REQUIRE(e.set_max_batch(2, true).ok());
  // 30 + 60 tokens: decode wrote positions [30 - back, 89), 4 full pages of them to prefill again.
  REQUIRE(e.add_request(req(1, prompt_from({}, 30, 2), 60)).ok());
  bool finished = false;
  for (int k = 0; k < 500 && !finished; ++k) {
    auto events = e.step();
    REQUIRE(events.ok());
    for (const auto& ev : *events) finished = finished || ev.finished.has_value();
  }
  REQUIRE(finished);
  REQUIRE_FALSE(e.idle());  // the re-prefill has not run yet
  CHECK(e.kv_pages().used == 0);  // its pages count as free
  // A request needing the whole pool is admitted at once: the re-prefill is cancelled.
  const engine::Request big = req(2, prompt_from({}, 100, 8), 92);
  CHECK(e.admission(big) == engine::Admission::kNow);
  REQUIRE(e.add_request(big).ok());
  auto first = e.step();
  REQUIRE(first.ok());
  REQUIRE(first->size() == 1);
  CHECK((*first)[0].prefilled.value_or(0) == 100 - back);
  CHECK(e.kv_pages().reprefilled_tokens == 0);
  auto rest = run_requests(e, {});
  Outcome out;
  out.ids = (*first)[0].ids;
  out.ids.insert(out.ids.end(), rest[2].ids.begin(), rest[2].ids.end());
  CHECK(out.ids == solo_ids(*m.model, big));
  // Then only the big request's own: [100 - back, 176) of its 191 written positions.
  CHECK(e.kv_pages().reprefilled_tokens == 176 - (100 - back));

  SECTION("left alone, it runs in the next step and keys the reply's pages") {
    REQUIRE(e.add_request(req(3, prompt_from({}, 30, 2), 60)).ok());
    run_requests(e, {});
    CHECK(e.kv_pages().reprefilled_tokens == 176 - (100 - back) + 80 - (30 - back));
  }
}

TEST_CASE("with the prefix cache off a repeated prompt maps nothing and nothing is cached", "[engine][prefix]") {
  TinyModel m = load_tiny_model(1024);
  engine::Engine e(*m.model);
  REQUIRE(e.set_max_batch(2).ok());
  const auto p = prompt_from({}, 40, 9);
  run_requests(e, {req(1, p, 3)});
  auto again = run_requests(e, {req(2, p, 3)});
  CHECK(again[2].cached_tokens == 0);
  CHECK(e.kv_pages().cached == 0);
}

TEST_CASE("the prefix cache needs the batched program decode_batch", "[engine][prefix]") {
  TinyModel m = load_tiny_model(0, nullptr, "KERN_TINY_DSPARK_PLAN", nullptr);  // a speculative plan: no decode_batch
  engine::Engine e(*m.model);
  Status s = e.set_max_batch(1, true);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.rfind("the prefix cache needs a plan with the batched decode program 'decode_batch'", 0) == 0);
  CHECK(e.set_max_batch(1).ok());  // without the cache: the batch-1 engine
}
