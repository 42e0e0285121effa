// Streaming text output: each generated id's text is written (and flushed)
// as soon as it is complete, a UTF-8 character split over two tokens is
// written whole once its second token arrives, end tokens are not text, and
// ids without a token print as nothing with one warning per run.
#include <catch2/catch.hpp>

#include <cstdio>

#include "kern-run/stream_output.h"
#include "test/engine/tiny_model.h"
#include "test/tokenizer/tokenizer_fixture.h"
#include "test/run/text_helpers.h"

using namespace kern;

TEST_CASE("streamed text appears token by token and never as half a character", "[run][stream]") {
  auto tok = tok::Tokenizer::load(test::env_path("KERN_QWEN3_TOKENIZER_JSON"));
  if (!tok.ok()) FAIL(tok.error().message);
  // Byte-level tokens of the two bytes of "é" (C3 A9): "Ã" and "©".
  auto c3 = tok->token_to_id("\xC3\x83");
  auto a9 = tok->token_to_id("\xC2\xA9");
  auto hello = tok->token_to_id("Hello");
  REQUIRE(c3);
  REQUIRE(a9);
  REQUIRE(hello);
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  run::StreamPrinter printer(&*tok, {151645}, f, nullptr);
  printer.on_token(*hello);
  CHECK(test::written_to(f) == "Hello");
  printer.on_token(*c3);
  CHECK(test::written_to(f) == "Hello");  // half of "é": held back
  printer.on_token(*a9);
  CHECK(test::written_to(f) == "Hello\xC3\xA9");
  printer.on_token(151645);  // <|im_end|>: ends the text, not part of it
  printer.finish();
  CHECK(test::written_to(f) == "Hello\xC3\xA9\n");
  CHECK(printer.text() == "Hello\xC3\xA9");
  std::fclose(f);
}

TEST_CASE("an incomplete character at the end of the stream becomes one U+FFFD", "[run][stream]") {
  auto tok = tok::Tokenizer::load(test::env_path("KERN_QWEN3_TOKENIZER_JSON"));
  if (!tok.ok()) FAIL(tok.error().message);
  auto c3 = tok->token_to_id("\xC3\x83");
  REQUIRE(c3);
  run::StreamPrinter printer(&*tok, {}, nullptr, nullptr);  // collect only (--json)
  printer.on_token(*c3);
  CHECK(printer.text().empty());
  printer.finish();
  CHECK(printer.text() == "\xEF\xBF\xBD");
}

namespace {

/// The fixture tokenizer (ids [0, 263), test/tokenizer/tokenizer_fixture.h);
/// `hello_id` moves its vocabulary entry "Ġhello" (260) there, leaving gaps.
tok::Tokenizer fixture_tokenizer(int hello_id = 260) {
  auto tok = tok::Tokenizer::from_json(tok::testing::fixture_json([hello_id](rapidjson::Document& d) {
                                         d["model"]["vocab"]["\xC4\xA0hello"].SetInt(hello_id);
                                       }),
                                       "tok.json");
  if (!tok.ok()) FAIL(tok.error().message);
  return *tok;
}

}  // namespace

// Issue 22 item 15: a tokenizer without the ids the plan produces must not
// give empty text silently; HF's decode skips such ids, so they still print
// as nothing, and the first one of a run is named once on stderr.
TEST_CASE("a generated id past the tokenizer's ids prints as nothing and is warned about once", "[run][stream]") {
  const tok::Tokenizer tok = fixture_tokenizer();
  REQUIRE(tok.vocab_size() == 263);
  std::vector<std::string> warnings;
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  run::StreamPrinter printer(&tok, {}, f, nullptr, [&](const std::string& w) { warnings.push_back(w); });
  printer.on_token('h');
  printer.on_token(300);     // past the tokenizer: a padding row, or another model's tokenizer
  printer.on_token(151935);  // a second one: no second warning
  printer.on_token('i');
  printer.finish();
  CHECK(test::written_to(f) == "hi\n");
  CHECK(printer.text() == "hi");
  CHECK(printer.missing_tokens() == 2);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "generated id 300 is past the tokenizer's ids [0, 263): printed as nothing, as HF's decode does (an "
        "embedding padding row, which trained weights do not choose: random weights, or a --tokenizer of another "
        "model?); said once per run");
  // The text is exactly what Tokenizer::decode (HF's decode) gives for the same ids.
  const std::vector<int32_t> ids = {'h', 300, 151935, 'i'};
  CHECK(tok.decode(ids) == printer.text());
  std::fclose(f);
}

TEST_CASE("a generated id in a gap of the tokenizer's ids prints as nothing and is warned about once",
          "[run][stream]") {
  const tok::Tokenizer tok = fixture_tokenizer(270);  // ids 260 and 263 .. 269 have no token
  REQUIRE(tok.vocab_size() == 271);
  CHECK_FALSE(tok.has_token(265));
  CHECK(tok.has_token(270));
  std::vector<std::string> warnings;
  run::StreamPrinter printer(&tok, {}, nullptr, nullptr, [&](const std::string& w) { warnings.push_back(w); });
  printer.on_token(265);
  printer.on_token(270);  // " hello"
  printer.on_token(260);  // a second gap: no second warning
  printer.on_token(262);  // "<tool>"
  printer.finish();
  CHECK(printer.text() == " hello<tool>");
  CHECK(printer.missing_tokens() == 2);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "generated id 265 has no token (a gap in the tokenizer's ids [0, 271)): printed as nothing, as HF's decode "
        "does (a --tokenizer of another model?); said once per run");
}

TEST_CASE("ids with tokens, stop ids and a run without a tokenizer never warn", "[run][stream]") {
  const tok::Tokenizer tok = fixture_tokenizer();
  int warned = 0;
  run::StreamPrinter printer(&tok, {300}, nullptr, nullptr, [&](const std::string&) { ++warned; });
  for (int id = 0; id < tok.vocab_size(); ++id) printer.on_token(id);
  printer.on_token(300);  // a stop id past the tokenizer ends the text: not a missing token
  printer.finish();
  CHECK(printer.missing_tokens() == 0);
  run::StreamPrinter ids_only(nullptr, {}, nullptr, nullptr, [&](const std::string&) { ++warned; });
  ids_only.on_token(151935);
  CHECK(warned == 0);
}
