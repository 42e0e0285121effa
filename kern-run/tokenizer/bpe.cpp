// Byte-level BPE merge loop (see bpe.h).
#include "kern-run/tokenizer/bpe.h"

#include <queue>

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

namespace {

struct Symbol {
  int32_t id;
  int32_t prev;  ///< index of the previous live symbol, -1 at the start
  int32_t next;  ///< index of the next live symbol, -1 at the end
  bool live;
};

struct QueuedMerge {
  int32_t rank;
  int32_t pos;  ///< index of the left symbol
  int32_t new_id;
  /// Orders the max-heap so that the top is the lowest rank, then the
  /// leftmost position (HF's `Merge` ordering).
  bool operator<(const QueuedMerge& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

}  // namespace

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  const int32_t n = static_cast<int32_t>(word.size());
  if (n == 1) {
    out.push_back(byte_ids_[static_cast<uint8_t>(word[0])]);
    return;
  }
  std::vector<Symbol> symbols(n);
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = Symbol{byte_ids_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1, true};
  }
  std::vector<QueuedMerge> heap_storage;
  heap_storage.reserve(n);
  std::priority_queue<QueuedMerge> queue(std::less<QueuedMerge>(), std::move(heap_storage));
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (const auto* m = merges_.find(symbols[i].id, symbols[i + 1].id)) {
      queue.push(QueuedMerge{m->rank, i, m->new_id});
    }
  }
  while (!queue.empty()) {
    const QueuedMerge top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.live || left.next < 0) continue;
    const int32_t right_pos = left.next;
    const Symbol right = symbols[right_pos];
    // Stale entry: the pair at this position changed since it was queued.
    const auto* current = merges_.find(left.id, right.id);
    if (current == nullptr || current->new_id != top.new_id) continue;
    left.id = top.new_id;
    left.next = right.next;
    symbols[right_pos].live = false;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const auto* m = merges_.find(symbols[left.prev].id, left.id)) {
        queue.push(QueuedMerge{m->rank, left.prev, m->new_id});
      }
    }
    if (left.next >= 0) {
      if (const auto* m = merges_.find(left.id, symbols[left.next].id)) {
        queue.push(QueuedMerge{m->rank, top.pos, m->new_id});
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out, BpeCache& cache) const {
  // Single bytes and pairs are cheaper to merge than to look up.
  if (word.size() <= 2) {
    merge_word(word, out);
    return;
  }
  // HF caches words shorter than 256 bytes; beyond some thousands of entries
  // the map costs more than it saves.
  constexpr size_t kMaxCachedWordBytes = 256;
  constexpr size_t kMaxCacheEntries = size_t{1} << 16;
  if (word.size() >= kMaxCachedWordBytes) {
    merge_word(word, out);
    return;
  }
  std::string key(word);
  if (auto it = cache.find(key); it != cache.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  std::vector<int32_t> ids;
  merge_word(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cache.size() >= kMaxCacheEntries) cache.clear();
  cache.emplace(std::move(key), std::move(ids));
}

}  // namespace kern::tok
