// Bytes of device memory a plan needs, by class (docs/memory-plan.md): what
// `kern-verify --dump` and `kern-run --json` report. Shared so that both
// sides count the same way; kern-load allocates exactly these amounts.
#pragma once

#include <cstdint>
#include <optional>

#include "common/plan_format.h"

namespace kern {

/// Byte counts of one plan; every count is a plain sum of sizes (no
/// alignment padding), saturating at UINT64_MAX (hostile sizes).
struct PlanMemoryBytes {
  uint64_t weights = 0;    ///< buffers of class weight
  uint64_t io = 0;         ///< buffers of class input, output and carry (own allocations)
  uint64_t workspace = 0;  ///< buffers of class workspace, each at its maximum (in the arena)
  uint64_t scratch = 0;    ///< every scratch entry at its maximum (in the arena)
  uint64_t state_bytes_per_token = 0;  ///< sum of the states' bytes_per_token
  uint64_t state_bytes_fixed = 0;      ///< sum of the states' bytes_fixed
  /// States at `capacity` tokens (bytes_per_token x capacity + bytes_fixed,
  /// summed); empty without a capacity or on u64 overflow.
  std::optional<uint64_t> states;
  uint64_t arena = 0;            ///< Plan.arena.size_bytes: the arena after planning
  uint64_t arena_unplanned = 0;  ///< Plan.arena.unplanned_bytes: before planning
  uint64_t arena_peak_live = 0;  ///< Plan.arena.peak_live_bytes: lower bound of any arena
  bool arena_planned = false;    ///< Plan.arena.planned
  /// weights + io + arena + states: the device memory of a load (empty
  /// without states). Alignment padding of the separate allocations aside.
  std::optional<uint64_t> total;
};

/// Counts the bytes of a validated plan `p` (Plan.arena present); `capacity`
/// (tokens) sizes the states when given.
PlanMemoryBytes plan_memory_bytes(const plan::Plan& p, std::optional<uint64_t> capacity);

}  // namespace kern
