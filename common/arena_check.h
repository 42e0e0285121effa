// The independent check of a plan's workspace arena (docs/memory-plan.md):
// recomputes every region's live ranges from the plan's launch records (not
// from the planner's view of the manifest) and proves, by sort and sweep, that
// no two regions live at the same launch share a byte and that every region
// fits the arena. kern-verify's tests run it on every plan it writes;
// kern-load runs it on every untrusted plan (plan_validate.cpp). It never
// includes kern-verify, so a planner bug cannot hide here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/plan_format.h"

namespace kern {

/// Alignment in bytes of every arena offset lowering writes and of the arena
/// base (kernels use 16-byte vector paths; 256 matches cuMemAlloc's).
inline constexpr uint64_t kArenaAlign = 256;

/// Launches [begin, end) in a plan's global launch order: the programs'
/// launch lists concatenated in Plan.programs order, so ranges of different
/// programs never meet (a workspace is dead across executions).
struct LiveRange {
  uint64_t begin = 0;
  uint64_t end = 0;  ///< exclusive; begin < end
};

/// One region of the arena: bytes [offset, offset + size_bytes), live during
/// each of `live` (any order, may touch or overlap each other).
struct ArenaRegion {
  uint64_t offset = 0;
  uint64_t size_bytes = 0;  ///< 0: occupies nothing, never conflicts
  std::vector<LiveRange> live;
};

/// What check_arena found wrong.
struct ArenaConflict {
  enum class Kind { kOutOfBounds, kMisaligned, kOverlap };
  Kind kind = Kind::kOverlap;
  size_t a = 0;       ///< region index (the only one for kOutOfBounds / kMisaligned)
  size_t b = 0;       ///< kOverlap: the other region
  uint64_t time = 0;  ///< kOverlap: a launch (global order) at which both are live
};

/// Sort and sweep over `regions`, O(n log n) in the number of live ranges:
/// every non-empty region must satisfy offset % align == 0 and offset +
/// size_bytes <= arena_bytes (checked u64), and no two regions with
/// intersecting live ranges may intersect in bytes. Returns the first
/// conflict found, nullopt when the arena is sound. `align` must be > 0.
std::optional<ArenaConflict> check_arena(std::span<const ArenaRegion> regions, uint64_t arena_bytes,
                                         uint64_t align);

/// Largest sum of sizes (each rounded up to `align`) of regions live at one
/// launch: a lower bound for any arena holding `regions`.
uint64_t peak_live_bytes(std::span<const ArenaRegion> regions, uint64_t align);

/// The arena regions of a plan whose indices were validated: regions
/// [0, buffers) are Plan.buffers in order (non-workspace buffers have size 0
/// and no ranges), then one per Plan.scratch entry. A workspace buffer is
/// live in each program from the first launch that names it to the last; a
/// scratch entry from the first to the last launch of each dispatch that
/// names it (scratch is private to one dispatch of its kernel). Offsets and
/// sizes are the plan's `arena_offset` and `max_size_bytes`.
std::vector<ArenaRegion> plan_arena_regions(const plan::Plan& p);

/// check_arena on plan_arena_regions(p) against Plan.arena, with the message
/// a person needs: "workspace arena: buffer 'qkv' [0, 4096) and scratch
/// 'partial_val' [2048, 4096) are both live at program 'decode' launch 7".
/// Also refused: a missing arena, an alignment that is not a power of two
/// >= kArenaAlign. Returns nullopt when sound. Indices must be validated.
std::optional<std::string> check_plan_arena(const plan::Plan& p);

}  // namespace kern
