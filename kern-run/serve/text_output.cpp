// A generation's text: stop ids, stop strings, reasoning (text_output.h).
#include "kern-run/serve/text_output.h"

#include <algorithm>

#include "kern-engine/request.h"

namespace kern::run::serve {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

/// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t partial_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace

TextOutput::TextOutput(const tok::Tokenizer& tokenizer, bool skip_special_tokens, std::vector<int64_t> stop_ids,
                       std::vector<std::string> stop, bool split_reasoning)
    : decoder_(tokenizer, skip_special_tokens),
      stop_ids_(std::move(stop_ids)),
      stop_(std::move(stop)),
      phase_(split_reasoning ? Phase::kStart : Phase::kContent) {}

TextDelta TextOutput::push(int64_t id) {
  if (stopped_) return {};
  if (engine::is_stop_id(stop_ids_, id)) {
    stopped_ = true;
    return take(decoder_.finish(), true);
  }
  return take(decoder_.push(static_cast<int32_t>(id)), false);
}

TextDelta TextOutput::finish() {
  if (stopped_) return {};
  return take(decoder_.finish(), true);
}

TextDelta TextOutput::take(const std::string& text, bool final) {
  TextDelta d;
  pending_ += text;
  // The earliest stop string ends the text.
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, pending_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    route(pending_.substr(0, cut), true, d);
    pending_.clear();
    return d;
  }
  // Hold back the longest tail that may begin a stop string.
  size_t hold = 0;
  if (!final)
    for (const std::string& s : stop_) hold = std::max(hold, partial_suffix(pending_, s));
  route(pending_.substr(0, pending_.size() - hold), final, d);
  pending_.erase(0, pending_.size() - hold);
  return d;
}

void TextOutput::route(std::string text, bool final, TextDelta& d) {
  route_buf_ += text;
  for (;;) {
    if (phase_ == Phase::kContent) {
      if (skip_newlines_) {
        size_t b = route_buf_.find_first_not_of('\n');
        route_buf_.erase(0, b == std::string::npos ? route_buf_.size() : b);
        if (route_buf_.empty()) return;
        skip_newlines_ = false;
      }
      content_ += route_buf_;
      d.content += route_buf_;
      route_buf_.clear();
      return;
    }
    if (phase_ == Phase::kStart) {
      // Qwen3 opens its reasoning with <think> (possibly after newlines).
      size_t b = route_buf_.find_first_not_of("\n ");
      if (b == std::string::npos) {
        if (final) phase_ = Phase::kContent;
        else return;
        continue;
      }
      std::string_view rest = std::string_view(route_buf_).substr(b);
      if (rest.substr(0, kOpen.size()) == kOpen) {
        route_buf_.erase(0, b + kOpen.size());
        phase_ = Phase::kThinking;
      } else if (!final && kOpen.substr(0, rest.size()) == rest) {
        return;  // may still become <think>
      } else {
        phase_ = Phase::kContent;
      }
      continue;
    }
    // Thinking: reasoning until </think>; the content after it drops leading newlines.
    size_t close = route_buf_.find(kClose);
    if (close != std::string::npos) {
      std::string r = route_buf_.substr(0, close);
      reasoning_ += r;
      d.reasoning += r;
      route_buf_.erase(0, close + kClose.size());
      phase_ = Phase::kContent;
      skip_newlines_ = true;
      continue;
    }
    size_t hold = final ? 0 : partial_suffix(route_buf_, kClose);
    std::string r = route_buf_.substr(0, route_buf_.size() - hold);
    reasoning_ += r;
    d.reasoning += r;
    route_buf_.erase(0, route_buf_.size() - hold);
    return;
  }
}

}  // namespace kern::run::serve
