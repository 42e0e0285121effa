// Streaming text output: each generated id's text is written (and flushed)
// as soon as it is complete, a UTF-8 character split over two tokens is
// written whole once its second token arrives, and end tokens are not text.
#include <catch2/catch.hpp>

#include <cstdio>

#include "kern-run/stream_output.h"
#include "test/engine/tiny_model.h"

using namespace kern;

namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::string out(static_cast<size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  out.resize(std::fread(out.data(), 1, out.size(), f));
  std::fseek(f, 0, SEEK_END);
  return out;
}

}  // namespace

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
  CHECK(contents(f) == "Hello");
  printer.on_token(*c3);
  CHECK(contents(f) == "Hello");  // half of "é": held back
  printer.on_token(*a9);
  CHECK(contents(f) == "Hello\xC3\xA9");
  printer.on_token(151645);  // <|im_end|>: ends the text, not part of it
  printer.finish();
  CHECK(contents(f) == "Hello\xC3\xA9\n");
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
