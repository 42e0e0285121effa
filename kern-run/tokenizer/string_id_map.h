// String -> token id hash map for vocabularies of ~10^5 entries: open
// addressing with linear probing over a flat slot array (one allocation,
// no per-entry nodes), keys borrowed from storage the owner keeps alive.
// Built once at load, then read-only (safe for concurrent lookups).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kern::tok {

class StringIdMap {
 public:
  /// Pre-sizes for `n` keys (load factor <= 0.6).
  void reserve(size_t n);
  /// Adds `key` -> `id`; returns false (and changes nothing) if `key` is
  /// already present. `key`'s bytes are borrowed and must outlive the map.
  bool insert(std::string_view key, int32_t id);
  /// The id of `key`, or nullopt.
  std::optional<int32_t> find(std::string_view key) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    const char* data = nullptr;  ///< borrowed key bytes; nullptr marks a free slot
    uint32_t size = 0;
    uint32_t hash = 0;           ///< low bits of the key's hash, checked first
    int32_t id = 0;
  };
  static uint64_t hash_of(std::string_view key);
  void grow();

  std::vector<Slot> slots_;  ///< capacity is 0 or a power of two
  size_t size_ = 0;
};

}  // namespace kern::tok
