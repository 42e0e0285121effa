// UTF-8 helpers for the tokenizer: validation, the lossy decoding HF's
// tokenizers applies when turning token bytes back into text (Rust's
// String::from_utf8_lossy: one U+FFFD per maximal ill-formed subpart, Unicode
// §3.9 "U+FFFD substitution of maximal subparts"), and an incremental form of
// it for streaming. Bytes only: no normalization, no character properties.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kern::tok {

/// U+FFFD REPLACEMENT CHARACTER in UTF-8.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

/// Returns the byte offset of the first ill-formed byte of `text`, or
/// `text.size()` when all of it is well-formed UTF-8 (RFC 3629: no overlongs,
/// no surrogates, nothing above U+10FFFF).
size_t find_invalid_utf8(std::string_view text);

/// Appends `bytes` to `out` as text, each maximal ill-formed subpart replaced
/// by one U+FFFD, like Rust's String::from_utf8_lossy (what HF's ByteLevel
/// decoder returns). A truncated sequence at the end is one subpart too.
void append_utf8_lossy(std::string_view bytes, std::string& out);

/// Lossy UTF-8 decoding fed a piece at a time: `push` returns only whole
/// characters (and U+FFFD for subparts already known to be ill-formed) and
/// holds back an incomplete trailing sequence that later bytes may complete;
/// `finish` flushes what is held back (one U+FFFD if anything). The
/// concatenation of every output equals append_utf8_lossy of all the bytes.
class Utf8StreamDecoder {
 public:
  /// Appends the text that `bytes` completes to `out`.
  void push(std::string_view bytes, std::string& out);
  /// Appends U+FFFD to `out` if an incomplete sequence is held back; resets.
  void finish(std::string& out);
  /// Number of bytes held back (0..3).
  size_t pending_size() const { return pending_len_; }

 private:
  char pending_[4] = {};  ///< the held-back prefix of a multi-byte sequence
  size_t pending_len_ = 0;
};

}  // namespace kern::tok
