// Streams generated text to stdout as each token arrives (stream_output.h).
#include "kern-run/stream_output.h"

#include "kern-engine/request.h"

#include <cerrno>
#include <cstring>
#include <iostream>

#include "spdlog/spdlog.h"

namespace kern::run {

StreamPrinter::StreamPrinter(const tok::Tokenizer* tokenizer, std::vector<int64_t> stop_ids, std::FILE* text_out,
                             ProgressLine* progress, WarningSink warn)
    : tokenizer_(tokenizer), stop_ids_(std::move(stop_ids)), text_out_(text_out), progress_(progress),
      warn_(std::move(warn)) {
  if (tokenizer != nullptr) decoder_.emplace(*tokenizer);
  if (!warn_) warn_ = [](const std::string& w) { spdlog::warn("{}", w); };
}

std::string StreamPrinter::missing_token_warning(const tok::Tokenizer& tokenizer, int64_t id) {
  const std::string range = "ids [0, " + std::to_string(tokenizer.vocab_size()) + ")";
  const std::string head = "generated id " + std::to_string(id);
  if (id >= tokenizer.vocab_size())
    return head + " is past the tokenizer's " + range +
           ": printed as nothing, as HF's decode does (an embedding padding row, which trained weights do not "
           "choose: random weights, or a --tokenizer of another model?); said once per run";
  return head + " has no token (a gap in the tokenizer's " + range +
         "): printed as nothing, as HF's decode does (a --tokenizer of another model?); said once per run";
}

void StreamPrinter::on_prefill_progress(uint64_t done, uint64_t total) {
  if (progress_ != nullptr) progress_->update("prefill", done, total, "tokens");
}

void StreamPrinter::emit(const std::string& piece) {
  if (piece.empty()) return;
  text_ += piece;
  if (text_out_ == nullptr || !error_.ok()) return;
  errno = 0;
  if (std::fwrite(piece.data(), 1, piece.size(), text_out_) != piece.size() || std::fflush(text_out_) != 0)
    set_error(errno);
}

void StreamPrinter::set_error(int err) {
  if (!error_.ok()) return;
  std::string reason = err != 0 ? std::string(": ") + std::strerror(err) : "";
  error_ = make_error(ErrorKind::kIo, std::string(text_out_ == stdout ? "stdout" : "output") + ": write error" + reason);
}

void StreamPrinter::on_token(int64_t id) {
  if (progress_ != nullptr) progress_->clear();
  if (!decoder_ || engine::is_stop_id(stop_ids_, id)) return;
  // Generated ids are < vocab (checked by the runner); ids without a token
  // decode to nothing, as HF's decode skips them, but never silently.
  if (!tokenizer_->has_token(id)) {
    if (missing_tokens_++ == 0) warn_(missing_token_warning(*tokenizer_, id));
    return;
  }
  emit(decoder_->push(static_cast<int32_t>(id)));
}

void StreamPrinter::finish() {
  if (!decoder_) return;
  emit(decoder_->finish());
  if (text_out_ != nullptr && error_.ok()) {
    errno = 0;
    if (std::fputc('\n', text_out_) == EOF || std::fflush(text_out_) != 0) set_error(errno);
  }
}

namespace {

/// errno of the first failed write_stdout or flush_stdout (0: none yet).
int stdout_errno = 0;

}  // namespace

void write_stdout(std::string_view bytes) {
  errno = 0;
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() && stdout_errno == 0)
    stdout_errno = errno != 0 ? errno : EIO;
}

Status flush_stdout() {
  // fflush first: a failed flush discards the buffer, so a second one
  // (std::cout.flush() calls fflush too) would succeed and lose the errno.
  errno = 0;
  if (std::fflush(stdout) != 0 && stdout_errno == 0) stdout_errno = errno != 0 ? errno : EIO;
  std::cout.flush();
  if (stdout_errno != 0) return make_error(ErrorKind::kIo, std::string("stdout: write error: ") + std::strerror(stdout_errno));
  // A write through std::cout (CLI11's help) that failed inside its buffer.
  if (std::ferror(stdout) != 0 || !std::cout) return make_error(ErrorKind::kIo, "stdout: write error");
  return {};
}

}  // namespace kern::run
