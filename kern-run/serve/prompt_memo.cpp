// The ids of finished chat turns by their rendered text (prompt_memo.h).
#include "kern-run/serve/prompt_memo.h"

namespace kern::run::serve {

void PromptMemo::remember(std::string text, std::vector<int64_t> ids) {
  if (text.empty() || max_entries_ == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->text == text) {  // seen again: refreshed, not duplicated
      entries_.erase(it);
      break;
    }
  entries_.push_back({std::move(text), std::move(ids)});
  while (entries_.size() > max_entries_) entries_.pop_front();
}

std::optional<PromptMemo::Hit> PromptMemo::longest_prefix(const std::string& text) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Entry* best = nullptr;
  for (const Entry& e : entries_)
    if (e.text.size() <= text.size() && (best == nullptr || e.text.size() > best->text.size()) &&
        text.compare(0, e.text.size(), e.text) == 0)
      best = &e;
  if (best == nullptr) return std::nullopt;
  return Hit{best->text.size(), best->ids};
}

}  // namespace kern::run::serve
