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
  /// Cost: one trie step per byte compared, at most the longest pattern's
  /// length per position of `text`, however many patterns there are.
  void find_matches(std::string_view text, std::vector<TextSplit>& out) const;

  /// Trie steps taken by find_matches so far: tests bound it to show the
  /// cost does not grow with the number of patterns (no timing).
  uint64_t match_steps() const { return steps_; }

 private:
  /// A byte trie of the patterns, children as first-child/next-sibling
  /// lists in one vector (node 0 is the root); `pattern` is the first
  /// pattern (in pattern order) spelled by the path to the node, or -1.
  struct Node {
    uint32_t first_child = 0;   ///< 0: none (the root is never a child)
    uint32_t next_sibling = 0;  ///< 0: none
    int32_t pattern = -1;
    uint8_t byte = 0;
  };
  /// The child of `node` along `byte`, or 0.
  uint32_t child(uint32_t node, uint8_t byte) const;

  std::vector<Pattern> patterns_;
  std::vector<Node> trie_;
  /// The root's children by byte (the root has up to 256; others few).
  std::array<uint32_t, 256> root_child_{};
  mutable uint64_t steps_ = 0;
};

/// Unicode \w as Rust's regex crate defines it (used by single_word).
bool is_word_char(char32_t c);
/// Unicode White_Space (Rust's regex \s, used by lstrip/rstrip).
bool is_white_space(char32_t c);

}  // namespace kern::tok
