// ArgPack: a kernelParams array built value by value, for the kernel tests
// and the cpu kernel benchmark (no test framework needed).
#pragma once

#include <cstddef>
#include <cstring>
#include <deque>
#include <vector>

namespace kern::cpu::test {

/// Builds a kernelParams array: each add() stores one value (8-byte slots,
/// stable addresses) and records a pointer to it.
class ArgPack {
 public:
  template <typename T>
  ArgPack& add(T value) {
    static_assert(sizeof(T) <= 8);
    slots_.emplace_back();
    std::memcpy(slots_.back().bytes, &value, sizeof(T));
    ptrs_.push_back(slots_.back().bytes);
    return *this;
  }
  /// Replaces param i's value (same rules as add).
  template <typename T>
  ArgPack& set(size_t i, T value) {
    std::memcpy(slots_[i].bytes, &value, sizeof(T));
    return *this;
  }
  void* const* data() const { return ptrs_.data(); }
  size_t size() const { return ptrs_.size(); }

 private:
  struct Slot {
    alignas(8) unsigned char bytes[8] = {};
  };
  std::deque<Slot> slots_;
  std::vector<void*> ptrs_;
};

}  // namespace kern::cpu::test
