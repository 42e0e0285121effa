// The ids of finished chat turns, keyed by their rendered text (kern-run
// serve; docs/serving.md "Prefix caching"). A client resends a conversation
// as text; encoding a reply's text again need not give the ids the model
// generated (a text has many id sequences, the tokenizer picks one), and the
// resent history would miss the engine's prefix cache from the first such id
// on. The memo remembers, per finished turn, the conversation's rendered
// text up to the end of the reply and the ids that produced it (the prompt's
// and the generated ones); a new prompt is the ids of the longest remembered
// text it starts with, plus the encoding of the rest (which starts with a
// special token: the template's "<|im_start|>", so the encoding splits
// there the same way). Thread-safe; bounded to `max_entries` (oldest out).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kern::run::serve {

class PromptMemo {
 public:
  PromptMemo() = default;
  explicit PromptMemo(size_t max_entries) : max_entries_(max_entries) {}

  /// Remembers that `text` (a rendered conversation up to a reply's end) is
  /// the ids `ids`. The oldest entry leaves past max_entries.
  void remember(std::string text, std::vector<int64_t> ids);

  /// The longest remembered text of at least 1 byte that `text` starts
  /// with: its length in bytes and its ids; nullopt when none.
  struct Hit {
    size_t bytes = 0;
    std::vector<int64_t> ids;
  };
  std::optional<Hit> longest_prefix(const std::string& text) const;

 private:
  struct Entry {
    std::string text;
    std::vector<int64_t> ids;
  };
  size_t max_entries_ = 256;
  mutable std::mutex mutex_;
  std::deque<Entry> entries_;  ///< oldest first
};

}  // namespace kern::run::serve
