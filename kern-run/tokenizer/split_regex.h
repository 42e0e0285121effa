// The Split pre-tokenizer of HF tokenizer.json with behavior "Isolated":
// the text is cut into the matches of a pattern and the gaps between them,
// each its own piece. Regex patterns run on PCRE2 with UTF and UCP (Unicode
// properties for \p{L}, \s, ...) and JIT; HF runs them on Oniguruma, so
// patterns are first rewritten to match what Oniguruma matches
// (pattern_compat.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kern::tok {

/// A compiled split pattern. Movable, immutable; `split` is thread-safe.
class SplitRegex {
 public:
  /// Compiles `pattern` (UTF-8); `literal` takes it as a plain string (HF's
  /// {"String": ...} pattern). Errors carry PCRE2's message and the pattern
  /// offset, e.g. "missing closing parenthesis at offset 3". `origin` names
  /// where the pattern came from ("tokenizer.json: /pre_tokenizer/pattern")
  /// for match-time errors.
  static Result<SplitRegex> compile(std::string_view pattern, bool literal, std::string origin = "");

  /// PCRE2's match limit per match attempt (backtracking steps): real
  /// pre-tokenizer patterns need a few hundred; a catastrophic one fails
  /// fast with an error instead of running for minutes.
  static constexpr uint32_t kMatchLimit = 1000000;
  /// Added to kMatchLimit per byte of text left to match: backtracking
  /// linear in a run's length (a long whitespace run) is never refused.
  static constexpr uint32_t kMatchLimitPerByte = 8;

  SplitRegex(SplitRegex&&) noexcept;
  SplitRegex& operator=(SplitRegex&&) noexcept;
  ~SplitRegex();

  /// Appends the non-empty pieces of `text` (valid UTF-8) to `pieces` in
  /// order: each match and each gap between matches; together they cover
  /// `text`. Views point into `text`. Errors: a match, depth, heap or JIT
  /// stack limit (kWeight: the pattern backtracks catastrophically; names
  /// the origin, the pattern and the byte), other PCRE2 failures (kUsage).
  Status split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Impl;
  explicit SplitRegex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kern::tok
