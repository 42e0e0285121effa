// Added (and special) tokens of HF tokenizer.json, matched in the text before
// BPE runs, with HF's rules (tokenizers/src/tokenizer/added_vocabulary.rs,
// find_matches): leftmost-longest matches, scanning on after each match even
// when its flags discard it; single_word drops a match touching a word
// character (Unicode \w: Alphabetic, marks, Nd, Pc, Join_Control); lstrip and
// rstrip widen a match over adjacent Unicode White_Space (lstrip never into a
// previous match). Character properties come from ICU.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kern::tok {

/// One entry of tokenizer.json's `added_tokens`.
struct AddedToken {
  int32_t id = 0;
  std::string content;  ///< UTF-8, non-empty
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  ///< matched against the normalized text
  bool special = false;     ///< skipped by decode(..., skip_special_tokens)
};

/// A piece of text: bytes [begin, end) and, if an added token matched it,
/// that token's id (otherwise -1).
struct TextSplit {
  size_t begin = 0;
  size_t end = 0;
  int32_t id = -1;
};

/// Finds added tokens in text. Holds copies of the patterns (the token
/// contents, normalized for the normalized set).
class AddedTokenMatcher {
 public:
  /// A pattern: the text to find and the token it stands for.
  struct Pattern {
    std::string text;
    AddedToken token;
  };

  AddedTokenMatcher() = default;
  /// Patterns in HF's order (special tokens first, then the others, each in
  /// file order); among equally long matches at one position the first wins.
  explicit AddedTokenMatcher(std::vector<Pattern> patterns);

  bool empty() const { return patterns_.empty(); }

  /// Appends the splits of `text` (valid UTF-8) to `out`: matched tokens
  /// (widened per lstrip/rstrip) and the unmatched text between them, in
  /// order, covering `text`, none empty.
  void find_matches(std::string_view text, std::vector<TextSplit>& out) const;

 private:
  std::vector<Pattern> patterns_;
  /// Pattern indices by first byte, longest first (then in pattern order).
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

/// Unicode \w as Rust's regex crate defines it (used by single_word).
bool is_word_char(char32_t c);
/// Unicode White_Space (Rust's regex \s, used by lstrip/rstrip).
bool is_white_space(char32_t c);

}  // namespace kern::tok
