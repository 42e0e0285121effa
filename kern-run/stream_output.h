// kern-run's generation observer: streams generated text to stdout as each
// token arrives (through tok::StreamDecoder, so a UTF-8 character split
// across tokens is printed whole, once complete) and shows prefill progress.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

#include "kern-engine/generate.h"
#include "kern-run/progress.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {

/// Streams text and collects it. Stop ids (end tokens) are not printed or
/// collected: they end the text.
class StreamPrinter : public engine::GenerateObserver {
 public:
  /// `tokenizer` null: no text (ids only). `text_out` (borrowed) null:
  /// collect without printing (--json). `progress` (borrowed) may be null.
  StreamPrinter(const tok::Tokenizer* tokenizer, std::vector<int64_t> stop_ids, std::FILE* text_out,
                ProgressLine* progress);

  void on_prefill_progress(uint64_t done, uint64_t total) override;
  void on_token(int64_t id) override;

  /// Flushes what the decoder holds (U+FFFD for an incomplete character at
  /// the end) and, when printing, ends the text with a newline.
  void finish();

  /// The first failed write or flush of `text_out` (kIo, "stdout: write
  /// error: No space left on device"); printing stops after it, and
  /// generate() ends with it.
  Status status() const override { return error_; }

  /// Everything decoded so far (the concatenation of what was printed).
  const std::string& text() const { return text_; }

 private:
  void emit(const std::string& piece);
  void set_error(int err);  ///< records the first write error (errno, 0: unknown)

  std::optional<tok::StreamDecoder> decoder_;  ///< absent without a tokenizer
  std::vector<int64_t> stop_ids_;
  std::FILE* text_out_;
  ProgressLine* progress_;
  std::string text_;
  Status error_;
};

/// Writes `bytes` to stdout (buffered), remembering the errno of the first
/// failed write for flush_stdout. kern-run's commands print through it.
void write_stdout(std::string_view bytes);

/// Flushes std::cout and stdout and reports whether every write to stdout
/// succeeded: kIo, "stdout: write error: REASON" (the errno of the first
/// failed write_stdout or of fflush), or "stdout: write error" when only the
/// stream's error flag says so. main calls it last, so output to a full disk
/// is an error, not exit 0.
Status flush_stdout();

}  // namespace kern::run
