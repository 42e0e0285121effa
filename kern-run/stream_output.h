// kern-run's generation observer: streams generated text to stdout as each
// token arrives (through tok::StreamDecoder, so a UTF-8 character split
// across tokens is printed whole, once complete) and shows prefill progress.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
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
///
/// A generated id with no token in the tokenizer prints as nothing, as HF's
/// decode skips it, and the first one of a run is reported once through the
/// warning sink (missing_token_warning): an id past the tokenizer's last
/// token (an embedding padding row, e.g. Qwen3's 151669 tokens under 151936
/// rows, which trained weights do not choose) or a gap inside its ids. Text
/// that silently comes out empty because --tokenizer belongs to another
/// model is what the warning prevents; `kern-run detokenize` refuses the
/// same ids outright (an explicit id list has no padding rows to excuse).
class StreamPrinter : public engine::GenerateObserver {
 public:
  /// Receives the once-per-run warning text (without the "warning:" prefix).
  using WarningSink = std::function<void(const std::string&)>;

  /// `tokenizer` null: no text (ids only). `text_out` (borrowed) null:
  /// collect without printing (--json). `progress` (borrowed) may be null.
  /// `warn` empty: spdlog::warn (kern-run's "kern-run: warning: ..." line).
  StreamPrinter(const tok::Tokenizer* tokenizer, std::vector<int64_t> stop_ids, std::FILE* text_out,
                ProgressLine* progress, WarningSink warn = {});

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

  /// Generated ids so far that had no token (printed as nothing).
  uint64_t missing_tokens() const { return missing_tokens_; }

  /// The warning for generated id `id` that has no token in `tokenizer`:
  /// "generated id 151700 is past the tokenizer's ids [0, 151669): printed
  /// as nothing, ..." or, for a gap, "generated id 7 has no token (a gap in
  /// the tokenizer's ids [0, 300)): ...". Both end "said once per run".
  static std::string missing_token_warning(const tok::Tokenizer& tokenizer, int64_t id);

 private:
  void emit(const std::string& piece);
  void set_error(int err);  ///< records the first write error (errno, 0: unknown)

  const tok::Tokenizer* tokenizer_;            ///< borrowed; null: ids only
  std::optional<tok::StreamDecoder> decoder_;  ///< absent without a tokenizer
  std::vector<int64_t> stop_ids_;
  std::FILE* text_out_;
  ProgressLine* progress_;
  WarningSink warn_;
  uint64_t missing_tokens_ = 0;
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
