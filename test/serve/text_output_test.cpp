// A generation's text (kern-run/serve/text_output.h) on Qwen3's real
// tokenizer: stop ids, stop strings held back across tokens, and the
// reasoning split of a leading think block.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "kern-run/serve/text_output.h"

using namespace kern;
using namespace kern::run::serve;

namespace {

const tok::Tokenizer& qwen3() {
  static tok::Tokenizer t = [] {
    const char* path = std::getenv("KERN_QWEN3_TOKENIZER_JSON");
    REQUIRE(path != nullptr);
    auto r = tok::Tokenizer::load(path);
    if (!r.ok()) FAIL(r.error().message);
    return *r;
  }();
  return t;
}

std::vector<int64_t> ids_of(const std::string& text) {
  auto r = qwen3().encode(text);
  REQUIRE(r.ok());
  return {r->begin(), r->end()};
}

/// Pushes every id, then finish; returns the concatenated deltas.
TextDelta feed(TextOutput& out, const std::vector<int64_t>& ids) {
  TextDelta all;
  for (int64_t id : ids) {
    TextDelta d = out.push(id);
    all.content += d.content;
    all.reasoning += d.reasoning;
  }
  TextDelta d = out.finish();
  all.content += d.content;
  all.reasoning += d.reasoning;
  return all;
}

}  // namespace

TEST_CASE("a stop id ends the text and is not decoded", "[serve][text]") {
  auto ids = ids_of("Hello world<|im_end|> after");
  TextOutput out(qwen3(), true, {151645}, {}, false);
  TextDelta d = feed(out, ids);
  CHECK(d.content == "Hello world");
  CHECK(out.stopped());
}

TEST_CASE("a stop string ends the text where it starts, held back across tokens", "[serve][text]") {
  auto ids = ids_of("one two three four");
  TextOutput out(qwen3(), true, {}, {"three"}, false);
  std::string streamed;
  for (int64_t id : ids) {
    streamed += out.push(id).content;
    // Nothing of "three" is ever sent.
    CHECK(streamed.find("thr") == std::string::npos);
    if (out.stopped()) break;
  }
  CHECK(out.stopped());
  CHECK(streamed == "one two ");
  CHECK(out.content() == "one two ");
}

TEST_CASE("a held-back partial stop string is released when it does not complete", "[serve][text]") {
  auto ids = ids_of("one thx");
  TextOutput out(qwen3(), true, {}, {"three"}, false);
  TextDelta d = feed(out, ids);
  CHECK_FALSE(out.stopped());
  CHECK(d.content == "one thx");
}

TEST_CASE("with thinking on, a leading think block becomes reasoning", "[serve][text]") {
  auto ids = ids_of("<think>\nLet me see.\n</think>\n\nThe answer.");
  TextOutput out(qwen3(), true, {}, {}, true);
  TextDelta d = feed(out, ids);
  CHECK(d.reasoning == "\nLet me see.\n");
  CHECK(d.content == "The answer.");
  TextOutput plain(qwen3(), true, {}, {}, false);
  CHECK(feed(plain, ids).content == "<think>\nLet me see.\n</think>\n\nThe answer.");
}

TEST_CASE("without a leading think tag everything is content", "[serve][text]") {
  auto ids = ids_of("Plain <think> later");
  TextOutput out(qwen3(), true, {}, {}, true);
  TextDelta d = feed(out, ids);
  CHECK(d.reasoning.empty());
  CHECK(d.content == "Plain <think> later");
}

TEST_CASE("an unfinished think block is all reasoning", "[serve][text]") {
  auto ids = ids_of("<think>still thinking");
  TextOutput out(qwen3(), true, {}, {}, true);
  TextDelta d = feed(out, ids);
  CHECK(d.reasoning == "still thinking");
  CHECK(d.content.empty());
}
