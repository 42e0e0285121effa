// The conversation loop of kern-run --chat --interactive (kern-run/chat_repl.h)
// on the tiny Qwen3 with Qwen3's real vocabulary (random weights: gibberish
// text, but exact ids) and the cpu device, with scripted input: each reply
// is the one a single generation over the whole history from position 0
// gives; blank lines are skipped, /exit ends, the capacity is never crossed
// (a reply is cut there, a message that cannot fit is refused with the
// tokens left), an interrupt stops a reply and the conversation goes on.
#include <catch2/catch.hpp>

#include <cstdio>
#include <deque>

#include "kern-engine/generate.h"
#include "kern-run/chat_repl.h"
#include "kern-run/chat_session.h"
#include "kern-run/chat_template.h"
#include "test/engine/tiny_model.h"
#include "test/run/text_helpers.h"

using namespace kern;
using Catch::Matchers::StartsWith;

namespace {

test::TinyModel textvocab(uint64_t capacity = 0) {
  return test::load_tiny_model(capacity, nullptr, "KERN_TEXTVOCAB_PLAN", "KERN_TEXTVOCAB_WEIGHTS");
}

/// Scripted input and captured output.
struct Script {
  std::deque<std::string> lines;
  size_t read = 0;
  std::vector<std::string> notes;
  std::FILE* out = std::tmpfile();
  run::ChatReplIo io;
  explicit Script(std::vector<std::string> input) : lines(input.begin(), input.end()) {
    io.out = out;
    io.read_message = [this]() -> std::optional<std::string> {
      if (lines.empty()) return std::nullopt;
      ++read;
      std::string l = lines.front();
      lines.pop_front();
      return l;
    };
    io.note = [this](const std::string& n) { notes.push_back(n); };
  }
  ~Script() { std::fclose(out); }
};

run::ChatReplSettings settings(uint64_t steps) {
  run::ChatReplSettings s;
  s.steps = steps;
  s.chunk = 8;
  s.end_ids = run::qwen3_end_token_ids(test::qwen3_tokenizer());
  s.stop_ids = s.end_ids;
  s.max_capacity = 1024;
  return s;
}

/// Text of `ids` as the reply prints it: up to a stop id, then a newline.
std::string reply_text(const std::vector<int64_t>& ids, const std::vector<int64_t>& stops) {
  std::vector<int32_t> text_ids;
  for (int64_t id : ids) {
    if (engine::is_stop_id(stops, id)) break;
    text_ids.push_back(static_cast<int32_t>(id));
  }
  return test::qwen3_tokenizer().decode(text_ids) + "\n";
}

/// The ids a fresh generation over `history` (from position 0) gives.
std::vector<int64_t> fresh(engine::Model& model, const std::vector<int64_t>& history, uint64_t steps,
                           const std::vector<int64_t>& stops, const engine::SamplingParams& sampling = {}) {
  engine::Engine e(model);
  engine::Request r;
  r.prompt_ids = history;
  r.max_tokens = steps;
  r.stop_ids = stops;
  r.chunk = 8;
  r.sampling = sampling;
  auto g = engine::generate(e, r);
  REQUIRE(g.ok());
  return g->generated_ids;
}

/// The replies of a two-turn conversation `m1`, `m2` under `s`, and its
/// history: each from a fresh generation over the conversation so far from
/// position 0 (what the conversation loop sends the engine every turn).
struct TwoTurns {
  std::vector<int64_t> r1, r2, history;
};
TwoTurns expected_two_turns(engine::Model& model, const run::ChatReplSettings& s, const std::string& m1,
                            const std::string& m2) {
  TwoTurns t;
  run::ChatSession expect(test::qwen3_tokenizer(), s.system, false, s.end_ids);
  auto t1 = expect.next_turn(m1);
  REQUIRE(t1.ok());
  t.r1 = fresh(model, t1->ids, s.steps, s.stop_ids, s.sampling);
  expect.add_reply(*t1, t.r1);
  auto t2 = expect.next_turn(m2);
  REQUIRE(t2.ok());
  t.history = t1->ids;
  t.history.insert(t.history.end(), t.r1.begin(), t.r1.end() - 1);
  t.history.insert(t.history.end(), t2->ids.begin(), t2->ids.end());
  CHECK(t2->conversation == t.history);
  t.r2 = fresh(model, t.history, s.steps, s.stop_ids, s.sampling);
  return t;
}

}  // namespace

TEST_CASE("a two-turn conversation gives each reply of one generation over its whole history", "[run][chat]") {
  test::TinyModel m = textvocab();
  const run::ChatReplSettings s = settings(6);
  const auto [r1, r2, history] = expected_two_turns(*m.model, s, "Hello there", "And then?");

  engine::Engine e(*m.model);
  Script script({"Hello there", "", "   ", "And then?", "/exit", "never read"});
  auto outcome = run::run_chat_repl(e, test::qwen3_tokenizer(), s, script.io);
  REQUIRE(outcome.ok());
  CHECK(outcome->replies == 2);
  CHECK(outcome->refused == 0);
  CHECK(script.read == 5);  // blank lines skipped, nothing read after /exit
  CHECK(test::written_to(script.out) == reply_text(r1, s.stop_ids) + reply_text(r2, s.stop_ids));
  CHECK(outcome->cached_tokens == history.size() + r2.size() - 1);
  CHECK(script.notes.empty());
  CHECK(e.idle());
}

// Issue 39: with the engine's prefix cache (kern-run's default) the second
// turn maps the full pages of what the first left in the pool: its prompt
// and all its reply but the last id (which no step fed).
TEST_CASE("with the prefix cache a turn maps the earlier turns' full pages and prefills the rest", "[run][chat][prefix]") {
  test::TinyModel m = textvocab();
  const run::ChatReplSettings s = settings(20);
  const auto [r1, r2, history] = expected_two_turns(*m.model, s, "Hello there", "And then?");
  engine::Engine e(*m.model);
  REQUIRE(e.set_max_batch(1, true).ok());
  Script script({"Hello there", "And then?"});
  auto outcome = run::run_chat_repl(e, test::qwen3_tokenizer(), s, script.io);
  REQUIRE(outcome.ok());
  REQUIRE(outcome->replies == 2);
  run::ChatSession probe(test::qwen3_tokenizer(), std::nullopt, false, s.end_ids);
  auto t1 = probe.next_turn("Hello there");
  REQUIRE(t1.ok());
  const uint64_t written = t1->ids.size() + r1.size() - 1;  // the first turn's KV positions
  CHECK(outcome->prompt_cached_tokens == std::vector<uint64_t>{0, written / 16 * 16});
  CHECK(written / 16 >= 1);
  // The first reply is a fresh generation's. The second attends to the KV
  // the first reply's decode wrote, not to what a prefill of those ids
  // computes (the decode program's fused kernels round differently,
  // docs/serving.md "Prefix caching"): with these random weights its greedy
  // ids part from the fresh generation's after a few, so it is checked by
  // its cached tokens above, not by its text.
  const std::string out = test::written_to(script.out);
  const std::string first = reply_text(r1, s.stop_ids);
  CHECK(out.rfind(first, 0) == 0);
  CHECK(out.size() > first.size());
}

TEST_CASE("a sampled conversation: each turn's reply is its seeded generation over its whole history, not greedy",
          "[run][chat][sampling]") {
  test::TinyModel m = textvocab();
  run::ChatReplSettings s = settings(8);
  s.stop_ids.clear();  // every reply takes its 8 ids
  s.sampling = {.temperature = 2.0f, .top_p = 0.95f, .seed = 31};
  // Without the prefix cache each turn prefills the whole conversation: a fresh generation over it.
  const auto [r1, r2, history] = expected_two_turns(*m.model, s, "Hello there", "And then?");
  auto greedy = s;
  greedy.sampling = {};
  CHECK(expected_two_turns(*m.model, greedy, "Hello there", "And then?").r1 != r1);  // it samples
  for (int run = 0; run < 2; ++run) {  // and again: the same replies
    INFO("run " << run);
    engine::Engine e(*m.model);
    Script script({"Hello there", "And then?"});
    auto outcome = run::run_chat_repl(e, test::qwen3_tokenizer(), s, script.io);
    REQUIRE(outcome.ok());
    CHECK(outcome->replies == 2);
    CHECK(test::written_to(script.out) == reply_text(r1, {}) + reply_text(r2, {}));
  }
}

TEST_CASE("a conversation never crosses the capacity: a reply is cut there, a message too long is refused",
          "[run][chat]") {
  test::TinyModel m = textvocab(48);
  const run::ChatReplSettings s = settings(100);
  engine::Engine e(*m.model);
  // Whatever the first turn's length, its reply stops at the 48th token of the conversation.
  run::ChatSession probe(test::qwen3_tokenizer(), std::nullopt, false, s.end_ids);
  auto t1 = probe.next_turn("hello world");
  REQUIRE(t1.ok());
  const uint64_t n1 = t1->ids.size();
  REQUIRE(n1 < 40);
  Script script({"hello world", "this message cannot fit any more", "/exit"});
  auto outcome = run::run_chat_repl(e, test::qwen3_tokenizer(), s, script.io);
  REQUIRE(outcome.ok());
  const auto r1 = fresh(*m.model, t1->ids, 48 - n1, s.stop_ids);
  // The random weights never pick an end token here (the ids are exact: the cpu device is deterministic).
  REQUIRE_FALSE(engine::is_stop_id(s.stop_ids, r1.back()));
  CHECK(r1.size() == 48 - n1);
  CHECK(test::written_to(script.out) == reply_text(r1, s.stop_ids));
  REQUIRE(script.notes.size() == 2);
  CHECK(script.notes[0] == "the reply reached the capacity (48 tokens): the conversation is full; /exit and start "
                           "a new one, or raise --capacity (this plan holds up to 1024 tokens)");
  CHECK_THAT(script.notes.back(), StartsWith("error: the conversation is full: this message needs "));
  CHECK_THAT(script.notes.back(), Catch::Matchers::EndsWith(
                                      " of the capacity 48 tokens are left; send a shorter message, or /exit and "
                                      "start a new conversation, or raise --capacity (this plan holds up to 1024 "
                                      "tokens)"));
  CHECK(outcome->refused == 1);
  CHECK(outcome->replies == 1);
  CHECK(e.idle());
}

TEST_CASE("an interrupt stops the streaming reply; its ids stay and the next turn continues from them",
          "[run][chat]") {
  test::TinyModel m = textvocab();
  run::ChatReplSettings s = settings(40);
  s.stop_ids.clear();  // --ignore-eos: only the steps or the interrupt end a reply
  for (bool sync : {false, true}) {
    INFO((sync ? "sync" : "async"));
    s.sync = sync;
    engine::Engine e(*m.model);
    Script script({"Count to ten", "More", "/exit"});
    int polls = 0;
    bool armed = true;
    // The interrupt comes at the 5th poll of the first reply (deterministic: no clock, no signal).
    script.io.interrupted = [&] {
      if (!armed) return false;
      if (++polls < 5) return false;
      armed = false;
      return true;
    };
    auto outcome = run::run_chat_repl(e, test::qwen3_tokenizer(), s, script.io);
    REQUIRE(outcome.ok());
    CHECK(outcome->interrupted == 1);
    CHECK(outcome->replies == 2);
    REQUIRE(script.notes.size() == 1);
    CHECK_THAT(script.notes[0], StartsWith("interrupted: the reply so far ("));
    // The interrupted reply's ids: those of a full reply, cut.
    run::ChatSession expect(test::qwen3_tokenizer(), std::nullopt, false, s.end_ids);
    auto t1 = expect.next_turn("Count to ten");
    REQUIRE(t1.ok());
    const auto full = fresh(*m.model, t1->ids, 40, {});
    REQUIRE(outcome->reply_tokens.size() == 2);
    const uint64_t k = outcome->reply_tokens[0];
    REQUIRE(k >= 1);
    REQUIRE(k < 10);  // stopped after a few steps, far from the 40
    const std::vector<int64_t> first(full.begin(), full.begin() + static_cast<long>(k));
    const std::string out = test::written_to(script.out);
    CHECK(out.rfind(reply_text(first, {}), 0) == 0);
    // The second reply continues from the cut reply.
    const std::vector<int64_t>& cut = first;
    expect.add_reply(*t1, cut);
    auto t2 = expect.next_turn("More");
    REQUIRE(t2.ok());
    std::vector<int64_t> history = t1->ids;
    history.insert(history.end(), cut.begin(), cut.end() - 1);
    history.insert(history.end(), t2->ids.begin(), t2->ids.end());
    CHECK(out == reply_text(first, {}) + reply_text(fresh(*m.model, history, 40, {}), {}));
    CHECK(e.idle());
  }
}
