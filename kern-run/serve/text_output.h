// A generation's text as a client sees it, built token by token on the HTTP
// thread: ids decode through tok::StreamDecoder (never half a UTF-8
// character); a stop id (an end token or a stop_token_ids entry) ends the
// text without being decoded; a stop string ends it where the string starts
// (the string itself is not returned; text that might be the start of a
// stop string is held back until it is known not to be); and, for a chat
// with thinking on, a leading `<think>…</think>` goes to `reasoning` instead
// of `content` (vLLM's reasoning_content, Qwen3's parser).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run::serve {

/// New text of one step.
struct TextDelta {
  std::string content;
  std::string reasoning;
  bool empty() const { return content.empty() && reasoning.empty(); }
};

/// The text state of one generation.
class TextOutput {
 public:
  /// `stop_ids`: ids that end the text (not decoded). `stop`: stop strings
  /// (non-empty). `split_reasoning`: route a leading think block to
  /// `reasoning`.
  TextOutput(const tok::Tokenizer& tokenizer, bool skip_special_tokens, std::vector<int64_t> stop_ids,
             std::vector<std::string> stop, bool split_reasoning);

  /// Takes generated id `id` (ignored once stopped). Returns the text that
  /// became final.
  TextDelta push(int64_t id);

  /// Ends the text (no more ids): releases what was held back (an
  /// incomplete character as U+FFFD, a partial stop string as text).
  TextDelta finish();

  /// A stop id or stop string ended the text.
  bool stopped() const { return stopped_; }
  /// The whole content and reasoning returned so far.
  const std::string& content() const { return content_; }
  const std::string& reasoning() const { return reasoning_; }

 private:
  /// Appends decoded text: stop strings, then the reasoning split.
  TextDelta take(const std::string& text, bool final);
  void route(std::string text, bool final, TextDelta& d);

  tok::StreamDecoder decoder_;
  std::vector<int64_t> stop_ids_;
  std::vector<std::string> stop_;
  bool stopped_ = false;
  std::string pending_;  ///< decoded text that may start a stop string
  enum class Phase { kStart, kThinking, kContent } phase_;
  std::string route_buf_;  ///< text that may still be (part of) a <think> or </think> tag
  bool skip_newlines_ = false;  ///< after </think>: the answer's leading newlines are dropped
  std::string content_, reasoning_;
};

}  // namespace kern::run::serve
