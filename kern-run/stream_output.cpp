// Streams generated text to stdout as each token arrives (stream_output.h).
#include "kern-run/stream_output.h"

#include "kern-engine/request.h"

#include <cerrno>
#include <cstring>
#include <iostream>

namespace kern::run {

StreamPrinter::StreamPrinter(const tok::Tokenizer* tokenizer, std::vector<int64_t> stop_ids, std::FILE* text_out,
                             ProgressLine* progress)
    : stop_ids_(std::move(stop_ids)), text_out_(text_out), progress_(progress) {
  if (tokenizer != nullptr) decoder_.emplace(*tokenizer);
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
  // Generated ids are < vocab (checked by the driver); ids without a token
  // (the embedding's padding rows past the tokenizer's vocabulary) decode to
  // nothing, as HF's decode skips them.
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
