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

// Stops where bugs hide (issue 48): each case builds its ids token by token,
// so the stop string's pieces fall where the case says, and checks after
// every push that what was sent is a prefix of the right final text (one
// byte of a stop string sent early fails it).

namespace {

/// The id of `token` spelled in the byte-level alphabet ("Ġth" is " th").
int64_t id_of(const std::string& token) {
  auto id = qwen3().token_to_id(token);
  INFO(token);
  REQUIRE(id.has_value());
  return *id;
}

/// Pushes `ids` (then finish unless a push stopped it) and checks that the
/// streamed content is always a prefix of `want`, and equals it at the end.
void expect_stream(TextOutput& out, const std::vector<int64_t>& ids, const std::string& want) {
  std::string streamed;
  for (int64_t id : ids) {
    streamed += out.push(id).content;
    INFO("streamed so far: '" << streamed << "'");
    CHECK(want.compare(0, streamed.size(), streamed) == 0);
    REQUIRE(streamed.size() <= want.size());
  }
  streamed += out.finish().content;
  CHECK(streamed == want);
  CHECK(out.content() == want);
}

}  // namespace

TEST_CASE("a stop string split over two tokens, its first part in a token with other text", "[serve][text]") {
  // "one" " th" | "ree" " four": the space before "th" is sent, "th" held back.
  const std::vector<int64_t> ids = {id_of("one"), id_of("Ġth"), id_of("ree"), id_of("Ġfour")};
  REQUIRE(qwen3().decode(std::vector<int32_t>(ids.begin(), ids.end())) == "one three four");
  TextOutput out(qwen3(), true, {}, {"three"}, false);
  expect_stream(out, ids, "one ");
  CHECK(out.stopped());
}

TEST_CASE("a stop string split over three tokens: every byte of a possible prefix is held back", "[serve][text]") {
  // " th" "r" "ee": after "r" the pending "thr" is 3 of the stop string's 5
  // bytes; after "thre" (stop "threes") it is one byte short of the whole.
  const std::vector<int64_t> ids = {id_of("one"), id_of("Ġth"), id_of("r"), id_of("ee"), id_of("s"), id_of("Ġfour")};
  REQUIRE(qwen3().decode(std::vector<int32_t>(ids.begin(), ids.end())) == "one threes four");
  TextOutput three(qwen3(), true, {}, {"three"}, false);
  expect_stream(three, ids, "one ");
  TextOutput threes(qwen3(), true, {}, {"threes"}, false);
  expect_stream(threes, ids, "one ");
  // The longest possible prefix, all but the stop string's last byte, pending.
  const std::vector<int64_t> tail = {id_of("one"), id_of("Ġth"), id_of("re"), id_of("e")};
  REQUIRE(qwen3().decode(std::vector<int32_t>(tail.begin(), tail.end())) == "one three");
  TextOutput four(qwen3(), true, {}, {"three"}, false);
  expect_stream(four, tail, "one ");
}

TEST_CASE("several stop strings: an earlier one's pending prefix is held back whatever the later ones hold",
          "[serve][text]") {
  const std::vector<int64_t> ids = {id_of("one"), id_of("Ġth"), id_of("ree"), id_of("Ġfour")};
  for (const std::vector<std::string>& stops :
       {std::vector<std::string>{"three", "zzz"}, std::vector<std::string>{"three", "four", "x"},
        std::vector<std::string>{"zzz", "three", "q"}}) {
    TextOutput out(qwen3(), true, {}, stops, false);
    expect_stream(out, ids, "one ");
  }
}

TEST_CASE("a stop id right after a held-back prefix releases the held text", "[serve][text]") {
  // " th" may begin "three": held back; the end token then ends the text,
  // and the held-back bytes are text after all.
  const int64_t im_end = 151645;
  TextOutput out(qwen3(), true, {im_end}, {"three"}, false);
  expect_stream(out, {id_of("one"), id_of("Ġth"), im_end}, "one th");
  CHECK(out.stopped());
  // The same with a partial </think> held back in the reasoning.
  TextOutput think(qwen3(), true, {im_end}, {}, true);
  TextDelta d = feed(think, {id_of("<think>"), id_of("abc"), id_of("</"), im_end});
  CHECK(d.reasoning == "abc</");
  CHECK(think.reasoning() == "abc</");
  CHECK(d.content.empty());
}
