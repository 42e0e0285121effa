// Flat string -> id map (see string_id_map.h).
#include "kern-run/tokenizer/string_id_map.h"

#include <cstring>

namespace kern::tok {

uint64_t StringIdMap::hash_of(std::string_view key) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a, then a final mix for the low bits
  for (unsigned char c : key) h = (h ^ c) * 0x100000001B3ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

void StringIdMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap * 3 < n * 5) cap *= 2;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  const size_t mask = cap - 1;
  for (const Slot& s : old) {
    if (s.data == nullptr) continue;
    size_t i = s.hash & mask;
    while (slots_[i].data != nullptr) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void StringIdMap::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

bool StringIdMap::insert(std::string_view key, int32_t id) {
  if ((size_ + 1) * 5 > slots_.size() * 3) grow();
  const uint32_t h = static_cast<uint32_t>(hash_of(key));
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  while (slots_[i].data != nullptr) {
    const Slot& s = slots_[i];
    if (s.hash == h && s.size == key.size() && std::memcmp(s.data, key.data(), key.size()) == 0) return false;
    i = (i + 1) & mask;
  }
  // A non-null pointer even for the empty key, so the slot reads as taken.
  slots_[i] = Slot{key.empty() ? "" : key.data(), static_cast<uint32_t>(key.size()), h, id};
  ++size_;
  return true;
}

std::optional<int32_t> StringIdMap::find(std::string_view key) const {
  if (slots_.empty()) return std::nullopt;
  const uint32_t h = static_cast<uint32_t>(hash_of(key));
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.data == nullptr) return std::nullopt;
    if (s.hash == h && s.size == key.size() && std::memcmp(s.data, key.data(), key.size()) == 0) return s.id;
  }
}

}  // namespace kern::tok
