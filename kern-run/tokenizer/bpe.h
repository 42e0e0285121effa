// The BPE model of HF tokenizers for byte-level vocabularies: a word (the
// raw bytes of one pre-token) starts as one symbol per byte and adjacent
// pairs are merged by rank until no ranked pair is left. The merge loop is
// HF's (tokenizers/src/models/bpe/word.rs, Word::merge_all): a min-heap on
// (rank, position), stale entries dropped when the pair at that position no
// longer produces the entry's token. No dropout, no unknown token, no
// continuing-subword prefix or end-of-word suffix: the loader rejects those.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kern::tok {

/// Pair-of-ids -> (rank, merged id) table: open addressing, linear probing.
/// Keys are two non-negative 31-bit ids, so the all-ones key marks a free slot.
class MergeTable {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t new_id = 0;
  };

  /// Sets the merge of (left, right); a later call for the same pair wins
  /// (HF builds its map from the merges list in order, later entries overwrite).
  void insert(int32_t left, int32_t right, int32_t rank, int32_t new_id);
  /// The entry for (left, right), or nullptr when that pair never merges.
  const Entry* find(int32_t left, int32_t right) const;
  size_t size() const { return size_; }
  /// Pre-sizes for `n` entries (load factor <= 1/2).
  void reserve(size_t n);

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t key_of(int32_t l, int32_t r) {
    return (uint64_t(uint32_t(l)) << 32) | uint32_t(r);
  }
  static size_t hash(uint64_t k) { return size_t((k * 0x9E3779B97F4A7C15ull) >> 17); }
  void grow();

  std::vector<Entry> slots_;  ///< capacity is 0 or a power of two
  size_t size_ = 0;
};

/// One symbol of a word being merged: a token id in a doubly linked list.
struct BpeSymbol {
  int32_t id;
  int32_t prev;  ///< index of the previous live symbol, -1 at the start
  int32_t next;  ///< index of the next live symbol, -1 at the end
  bool live;
};

/// A queued merge of the pair starting at symbol `pos`.
struct BpeQueuedMerge {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
  /// Heap order: the top is the lowest rank, then the leftmost position
  /// (HF's `Merge` ordering).
  bool operator<(const BpeQueuedMerge& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

/// State of one encode call: results of words already encoded (HF keeps a
/// similar cache; the key is the word's raw bytes) and scratch buffers
/// reused across words. Not shared between threads.
struct BpeWorkspace {
  std::unordered_map<std::string, std::vector<int32_t>> cache;
  std::vector<BpeSymbol> symbols;
  std::vector<BpeQueuedMerge> heap;
  std::vector<int32_t> ids;
};

/// Byte-level BPE: per-byte initial ids plus the merge table. Immutable after
/// loading; `encode_word` is const and safe to call from several threads.
class BpeModel {
 public:
  BpeModel() = default;
  /// `byte_ids[b]` is the vocabulary id of the byte-level character of byte b.
  BpeModel(std::array<int32_t, 256> byte_ids, MergeTable merges)
      : byte_ids_(byte_ids), merges_(std::move(merges)) {}

  /// Appends the ids of `word` (raw bytes of one pre-token, non-empty) to
  /// `out`, consulting and filling the workspace's cache.
  void encode_word(std::string_view word, std::vector<int32_t>& out, BpeWorkspace& ws) const;

  /// The merge loop without the cache: ids of `word`, appended to `out`.
  void merge_word(std::string_view word, std::vector<int32_t>& out, BpeWorkspace& ws) const;

  const MergeTable& merges() const { return merges_; }

 private:
  std::array<int32_t, 256> byte_ids_{};
  MergeTable merges_;
};

}  // namespace kern::tok
