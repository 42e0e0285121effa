// The static memory plan (docs/memory-plan.md): every workspace buffer and
// every kernel scratch of a verified manifest is placed in one arena at an
// offset chosen from liveness, so regions that are never live at the same
// launch share bytes. Offsets are assigned by greedy by size (the "Greedy by
// Size for Offset Calculation" of Pisarchyk & Lee 2020, TFLite's arena
// planner). Lowering writes the result into Plan.arena and each region's
// arena_offset; common/arena_check.h proves it independently.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/arena_check.h"
#include "kern-verify/verifier.h"

namespace kern::verify {

/// Where each region of a manifest lives in the arena, and the arena's bytes.
struct PlannedArena {
  std::vector<uint64_t> buffer_offsets;   ///< by buffer index; 0 for non-workspace buffers
  std::vector<uint64_t> scratch_offsets;  ///< by plan-wide scratch index
  uint64_t size_bytes = 0;       ///< the arena after planning (bytes)
  uint64_t unplanned_bytes = 0;  ///< every region in its own slot (bytes)
  uint64_t peak_live_bytes = 0;  ///< lower bound: most bytes live at one launch
  bool planned = true;           ///< false: the unplanned layout was kept
};

/// Greedy by size: visits the non-empty regions by size (each rounded up to
/// `align`, a power of two), largest first (ties: earlier first use, then
/// lower index), and puts each at the start of the smallest gap between the
/// already placed regions whose live ranges intersect its own that fits it,
/// else after the highest of them. Regions' `offset` is ignored. Returns the
/// offsets (multiples of `align`, 0 for empty regions) and sets
/// `arena_bytes` to the end of the highest region.
std::vector<uint64_t> greedy_by_size_offsets(std::span<const ArenaRegion> regions, uint64_t align,
                                             uint64_t* arena_bytes);

/// The arena regions of `v`, indexed like plan_arena_regions (buffers, then
/// plan-wide scratch), at dispatch granularity: a workspace buffer is live in
/// each program over every launch of the first to the last dispatch naming
/// it, a scratch entry over the launches of each dispatch of its kernel. The
/// launch numbering is lowering's (programs concatenated, one launch per impl
/// step), so these ranges contain the checker's launch-granular ones.
std::vector<ArenaRegion> manifest_arena_regions(const VerifiedManifest& v);

/// Plans the arena of `v` at kArenaAlign. `planned` false keeps every region
/// in its own slot in declaration order (`kern-verify --no-memory-plan`,
/// the layout before planning).
PlannedArena plan_arena(const VerifiedManifest& v, bool planned);

}  // namespace kern::verify
