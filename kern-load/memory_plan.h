// Sizes, alignments and places of everything the runtime allocates for a
// plan (SPEC §6, docs/memory-plan.md): workspace buffers and scratch live in
// one arena at the offsets kern-verify planned from liveness (Plan.arena,
// proven by plan_validate); weight, input, output and carry buffers get their
// own allocation at max_size_bytes (the symbols' maxima); each state its own
// at bytes_per_token x capacity + bytes_fixed. Every allocation is aligned to
// at least kMinAllocAlign.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/plan_format.h"
#include "common/plan_memory.h"
#include "common/result.h"

namespace kern::load {

/// Minimum alignment of every allocation in bytes (kernels use 16-byte
/// vector paths; 256 matches cuMemAlloc's guarantee).
inline constexpr uint64_t kMinAllocAlign = 256;

/// One region: size in bytes (may be 0: nothing is allocated) and either
/// its own allocation of that alignment or a place in the arena.
struct Region {
  uint64_t size_bytes = 0;
  uint64_t align_bytes = kMinAllocAlign;
  /// Set: the region is bytes [offset, offset + size_bytes) of the arena.
  std::optional<uint64_t> arena_offset{};
};

/// Regions indexed like Plan.buffers / Plan.states / Plan.scratch.
struct MemoryPlan {
  std::vector<Region> buffers;
  std::vector<Region> states;
  std::vector<Region> scratch;
  Region arena;                 ///< the workspace arena's own allocation
  PlanMemoryBytes bytes;        ///< by class, states at the capacity (the memory report)
  uint64_t total_bytes = 0;     ///< sum of the allocations' sizes rounded up to their alignment
};

/// Plans the memory of a validated plan (arena proven) for `capacity_tokens`
/// tokens of state. Errors (kUsage): a state size overflowing u64; (kManifest) a
/// launch's state argument offset at or beyond the state's size at this
/// capacity (names program, launch and state); the allocations' total
/// overflowing u64.
Result<MemoryPlan> plan_memory(const plan::Plan& p, uint64_t capacity_tokens);

}  // namespace kern::load
