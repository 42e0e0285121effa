// Byte-level BPE merge loop (see bpe.h).
#include "kern-run/tokenizer/bpe.h"

#include <algorithm>

namespace kern::tok {

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  if (cap <= slots_.size()) return;
  std::vector<Entry> old = std::move(slots_);
  slots_.assign(cap, Entry{});
  size_ = 0;
  for (const Entry& e : old) {
    if (e.key == kEmpty) continue;
    size_t i = hash(e.key) & (slots_.size() - 1);
    while (slots_[i].key != kEmpty) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = e;
    ++size_;
  }
}

void MergeTable::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

void MergeTable::insert(int32_t left, int32_t right, int32_t rank, int32_t new_id) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  const uint64_t k = key_of(left, right);
  size_t i = hash(k) & (slots_.size() - 1);
  while (slots_[i].key != kEmpty && slots_[i].key != k) i = (i + 1) & (slots_.size() - 1);
  if (slots_[i].key == kEmpty) ++size_;
  slots_[i] = Entry{k, rank, new_id};
}

const MergeTable::Entry* MergeTable::find(int32_t left, int32_t right) const {
  if (slots_.empty()) return nullptr;
  const uint64_t k = key_of(left, right);
  size_t i = hash(k) & (slots_.size() - 1);
  while (true) {
    const Entry& e = slots_[i];
    if (e.key == k) return &e;
    if (e.key == kEmpty) return nullptr;
    i = (i + 1) & (slots_.size() - 1);
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out, BpeWorkspace& ws) const {
  const int32_t n = static_cast<int32_t>(word.size());
  if (n == 1) {
    out.push_back(byte_ids_[static_cast<uint8_t>(word[0])]);
    return;
  }
  std::vector<BpeSymbol>& symbols = ws.symbols;
  symbols.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = BpeSymbol{byte_ids_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1, true};
  }
  std::vector<BpeQueuedMerge>& queue = ws.heap;
  queue.clear();
  auto push = [&queue](BpeQueuedMerge m) {
    queue.push_back(m);
    std::push_heap(queue.begin(), queue.end());
  };
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (const auto* m = merges_.find(symbols[i].id, symbols[i + 1].id)) queue.push_back({m->rank, i, m->new_id});
  }
  std::make_heap(queue.begin(), queue.end());
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    const BpeQueuedMerge top = queue.back();
    queue.pop_back();
    BpeSymbol& left = symbols[top.pos];
    if (!left.live || left.next < 0) continue;
    const int32_t right_pos = left.next;
    const BpeSymbol right = symbols[right_pos];
    // Stale entry: the pair at this position changed since it was queued.
    const auto* current = merges_.find(left.id, right.id);
    if (current == nullptr || current->new_id != top.new_id) continue;
    left.id = top.new_id;
    left.next = right.next;
    symbols[right_pos].live = false;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const auto* m = merges_.find(symbols[left.prev].id, left.id)) {
        push({m->rank, left.prev, m->new_id});
      }
    }
    if (left.next >= 0) {
      if (const auto* m = merges_.find(left.id, symbols[left.next].id)) {
        push({m->rank, top.pos, m->new_id});
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out, BpeWorkspace& ws) const {
  // Single bytes and pairs are cheaper to merge than to look up.
  if (word.size() <= 2) {
    merge_word(word, out, ws);
    return;
  }
  // HF caches words shorter than 256 bytes; beyond some thousands of entries
  // the map costs more than it saves.
  constexpr size_t kMaxCachedWordBytes = 256;
  constexpr size_t kMaxCacheEntries = size_t{1} << 16;
  if (word.size() >= kMaxCachedWordBytes) {
    merge_word(word, out, ws);
    return;
  }
  std::string key(word);
  if (auto it = ws.cache.find(key); it != ws.cache.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  ws.ids.clear();
  merge_word(word, ws.ids, ws);
  out.insert(out.end(), ws.ids.begin(), ws.ids.end());
  if (ws.cache.size() >= kMaxCacheEntries) ws.cache.clear();
  ws.cache.emplace(std::move(key), ws.ids);
}

}  // namespace kern::tok
