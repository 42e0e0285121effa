// A tensor-parallel world seen from one rank, for tests of the messages the
// ranks exchange with all_gather_bytes (kern-run/all_gather_bytes.h): every
// other rank's message is fixed in advance, as if it had made the same
// calls. The fake answers the pair of all-gathers all_gather_bytes makes
// (the sizes, then the bytes padded to the largest).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels-src/cpu/collective.h"

namespace kern::run::test {

class ScriptedWorld final : public cpu::Collective {
 public:
  /// `messages[r]` is rank r's message (this rank's entry is ignored: its own `in` is used).
  ScriptedWorld(uint32_t rank, std::vector<std::vector<uint8_t>> messages)
      : rank_(rank), messages_(std::move(messages)) {}
  uint32_t rank() const override { return rank_; }
  uint32_t world() const override { return static_cast<uint32_t>(messages_.size()); }
  Status all_gather(const void* in, void* out, size_t size_bytes) override {
    auto* o = static_cast<uint8_t*>(out);
    const bool sizes = calls++ % 2 == 0;
    for (uint32_t r = 0; r < world(); ++r) {
      uint8_t* slot = o + r * size_bytes;
      if (r == rank_) {
        std::memcpy(slot, in, size_bytes);
      } else if (sizes) {
        const uint64_t n = messages_[r].size();
        std::memcpy(slot, &n, sizeof n);
      } else {
        std::memset(slot, 0, size_bytes);
        std::memcpy(slot, messages_[r].data(), std::min(size_bytes, messages_[r].size()));
      }
    }
    return {};
  }
  Status barrier(uint32_t) override { return {}; }
  int calls = 0;

 private:
  uint32_t rank_;
  std::vector<std::vector<uint8_t>> messages_;
};

}  // namespace kern::run::test
