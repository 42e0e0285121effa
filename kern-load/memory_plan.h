// Sizes and alignments of everything the runtime allocates for a plan
// (SPEC §6): every buffer at its max_size_bytes (the symbols' maxima), each
// state at bytes_per_token x capacity + bytes_fixed, each kernel's scratch
// at its maximum. Every allocation is aligned to at least kMinAllocAlign.
// No workspace reuse yet (liveness planning is an open item, SPEC §9).
#pragma once

#include <cstdint>
#include <vector>

#include "common/plan_format.h"
#include "common/result.h"

namespace kern::load {

/// Minimum alignment of every allocation in bytes (kernels use 16-byte
/// vector paths; 256 matches cuMemAlloc's guarantee).
inline constexpr uint64_t kMinAllocAlign = 256;

/// One allocation: size in bytes (may be 0: nothing is allocated) and alignment.
struct Region {
  uint64_t size_bytes = 0;
  uint64_t align_bytes = kMinAllocAlign;
};

/// Regions indexed like Plan.buffers / Plan.states / Plan.scratch.
struct MemoryPlan {
  std::vector<Region> buffers;
  std::vector<Region> states;
  std::vector<Region> scratch;
  uint64_t total_bytes = 0;  ///< sum of sizes rounded up to their alignment
};

/// Plans the memory of a validated plan for `capacity_tokens` tokens of
/// state. Errors (kUsage): a state size overflowing u64; (kManifest) a
/// launch's state argument offset at or beyond the state's size at this
/// capacity (names program, launch and state).
Result<MemoryPlan> plan_memory(const plan::Plan& p, uint64_t capacity_tokens);

}  // namespace kern::load
