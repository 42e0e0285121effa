// Helpers the kern-run text tests share (test/run/*_test.cpp of
// kern_run_text_test, also kern_run_test's output tests): Qwen3's real
// tokenizer (KERN_QWEN3_TOKENIZER_JSON), loaded once per process, and what a
// test wrote to a temporary FILE*. One definition each, so the executables
// can be unity builds (docs/test-suite.md).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kern-run/tokenizer/tokenizer.h"
#include "test/engine/tiny_model.h"

namespace kern::test {

/// Qwen3's tokenizer, loaded on first use (FAILs the test when it cannot be).
inline const tok::Tokenizer& qwen3_tokenizer() {
  static auto tok = tok::Tokenizer::load(env_path("KERN_QWEN3_TOKENIZER_JSON"));
  if (!tok.ok()) FAIL(tok.error().message);
  return *tok;
}

/// The ids Qwen3's tokenizer gives `text` (REQUIREs success).
inline std::vector<int64_t> qwen3_encode(const std::string& text) {
  auto ids = qwen3_tokenizer().encode(text);
  REQUIRE(ids.ok());
  return {ids->begin(), ids->end()};
}

/// Everything written so far to `f` (a tmpfile()); the position is left at
/// the end, so later writes append.
inline std::string written_to(std::FILE* f) {
  std::fflush(f);
  std::string out(static_cast<size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  out.resize(std::fread(out.data(), 1, out.size(), f));
  std::fseek(f, 0, SEEK_END);
  return out;
}

}  // namespace kern::test
