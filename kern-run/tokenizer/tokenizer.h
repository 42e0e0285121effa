// kern::tok: text <-> token ids for byte-level BPE tokenizers described by a
// HuggingFace tokenizer.json (Qwen3's, GPT-2 style). The pipeline is HF
// tokenizers' (Rust crate 0.22): added tokens are cut out first (per their
// flags), the rest is NFC-normalized, split by the pre-tokenizer regex,
// mapped to byte-level symbols and merged by BPE rank; decode maps tokens
// back to bytes and makes text of them like Rust's from_utf8_lossy.
//
// Supported tokenizer.json subset (anything else is a load error, never a
// silent difference): normalizer null | NFC; pre_tokenizer Split (Isolated,
// not inverted) steps followed by ByteLevel (no prefix space, no regex);
// model BPE without dropout, unk_token, byte_fallback, ignore_merges or
// subword affixes; decoder ByteLevel; post_processor null | ByteLevel;
// truncation and padding null.
//
// Unicode versions: HF normalizes with Unicode 9.0 tables (emulated over
// ICU, normalizer.h) and splits with Oniguruma's Unicode 15.0 (emulated over
// PCRE2 10.42's Unicode 14.0, pattern_compat.h); characters newer than ICU's
// Unicode (15.0 in ICU 72) may still differ.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kern-run/tokenizer/added_tokens.h"
#include "kern-run/tokenizer/utf8.h"

namespace kern::tok {

struct TokenizerModel;  // tokenizer_model.h

/// A loaded tokenizer. Immutable and cheap to copy (shared state); encode and
/// decode may run concurrently from several threads.
class Tokenizer {
 public:
  /// Reads and parses the tokenizer.json at `path`. Errors (ErrorKind::kIo
  /// for reading, kWeight for content) name the path, then the JSON pointer
  /// or line:column, then what was expected and what was found, e.g.
  /// "tok.json: /model/merges/7: token \"xq\" is not in the vocabulary".
  static Result<Tokenizer> load(const std::string& path);

  /// Parses tokenizer.json text; `name` stands for the file in messages.
  static Result<Tokenizer> from_json(std::string json, std::string_view name);

  /// Token ids of `text` (UTF-8), as HF's encode(text, add_special_tokens =
  /// true) returns them (the supported post-processors add none). Special
  /// token text such as "<|im_start|>" becomes its id. Errors (kUsage):
  /// `text` is not valid UTF-8 (message gives the byte offset) or over 2 GiB.
  Result<std::vector<int32_t>> encode(std::string_view text) const;

  /// Text of `ids` as HF's decode(ids, skip_special_tokens) returns it: the
  /// tokens' bytes joined, ill-formed UTF-8 replaced by U+FFFD per maximal
  /// subpart. Ids with no token (negative, gaps, past the end) are skipped,
  /// as HF skips them.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  /// The id of `token` (added-token content, or a vocabulary entry spelled
  /// in the byte-level alphabet, e.g. "Ġworld"), or nullopt.
  std::optional<int32_t> token_to_id(std::string_view token) const;

  /// The raw bytes token `id` decodes to (empty for ids with no token).
  std::string_view token_bytes(int32_t id) const;

  /// The most bytes of text one token can stand for: the longest token's
  /// bytes or added token's content, or 0 when no bound holds (an added
  /// token with lstrip/rstrip swallows any run of spaces beside it). With
  /// NFC (which shrinks text at most 3 times), a text of B bytes has at
  /// least B / (3 * this) tokens: kern-run serve refuses a prompt that
  /// cannot fit before tokenizing it. O(vocabulary) per call.
  size_t max_token_bytes() const;

  /// Whether `id` has a token (a vocabulary entry or an added token):
  /// false for negative ids, gaps and ids >= vocab_size().
  bool has_token(int64_t id) const;

  /// Whether `id` is an added token marked special (skippable in decode).
  bool is_special(int32_t id) const;

  /// One past the largest id with a token (151669 for Qwen3).
  int32_t vocab_size() const;

  /// Added tokens in file order.
  const std::vector<AddedToken>& added_tokens() const;

  explicit Tokenizer(std::shared_ptr<const TokenizerModel> model) : model_(std::move(model)) {}

 private:
  friend class StreamDecoder;
  std::shared_ptr<const TokenizerModel> model_;  ///< shared, never null
};

/// Decodes ids one at a time for streaming output: each push returns only
/// text that is final, never half a UTF-8 character; bytes of an incomplete
/// character are held until a later token completes it. U+FFFD appears only
/// where Tokenizer::decode of all ids pushed so far would put one, so the
/// concatenation of every push and finish equals decode(all ids).
class StreamDecoder {
 public:
  /// `tokenizer` is copied (shared state); it need not outlive the decoder.
  explicit StreamDecoder(Tokenizer tokenizer, bool skip_special_tokens = false)
      : tokenizer_(std::move(tokenizer)), skip_special_(skip_special_tokens) {}

  /// Text completed by token `id` (possibly empty).
  std::string push(int32_t id);

  /// Text still held back at the end of the stream: one U+FFFD if an
  /// incomplete character is pending, else empty. Resets the decoder.
  std::string finish();

  /// Bytes held back waiting for the rest of a character (0..3).
  size_t pending_bytes() const { return utf8_.pending_size(); }

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  Utf8StreamDecoder utf8_;
};

}  // namespace kern::tok
