#include "kern-run/stream_output.h"

#include <algorithm>

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
  if (text_out_ == nullptr) return;
  std::fwrite(piece.data(), 1, piece.size(), text_out_);
  std::fflush(text_out_);
}

void StreamPrinter::on_token(int64_t id) {
  if (progress_ != nullptr) progress_->clear();
  if (!decoder_ || std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end()) return;
  // Generated ids are < vocab (checked by the driver); ids without a token
  // (the embedding's padding rows past the tokenizer's vocabulary) decode to
  // nothing, as HF's decode skips them.
  emit(decoder_->push(static_cast<int32_t>(id)));
}

void StreamPrinter::finish() {
  if (!decoder_) return;
  emit(decoder_->finish());
  if (text_out_ != nullptr) {
    std::fputc('\n', text_out_);
    std::fflush(text_out_);
  }
}

}  // namespace kern::run
