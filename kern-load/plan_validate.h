// Cross-reference checks on a plan the FlatBuffers Verifier accepted: the
// Verifier proves every offset and vector stays inside the buffer, but not
// that indices point at existing entries, enums hold known values, or
// expression chains have the shape the loader evaluates. This module checks
// exactly that, so later code can index without checks.
#pragma once

#include <optional>

#include "common/plan_format.h"
#include "common/result.h"

namespace kern::load {

/// Checks every cross-reference of `p` (SPEC §5, schemas/plan.fbs):
/// symbol bounds (min <= max); state alignment a power of two; every enum
/// value known; buffer/scratch shapes are one-node const/sym chains and
/// max_size_bytes == element size x product(shape at the symbols' maxima);
/// cubin sha256 absent or 32 bytes and paths relative without "..";
/// kernel->step, step->kernel, step->cubin, scratch->kernel, launch->step
/// indices in range; launch dispatch < dispatch_count; launch arg count ==
/// step param count; pointer params get buffer/state/scratch args with
/// in-range indices (buffer and scratch offsets within max_size_bytes,
/// scratch owned by the step's kernel), scalar params get literal/expr args;
/// every expression chain well-formed; the workspace arena sound
/// (check_plan_arena: aligned offsets, every workspace buffer and scratch
/// inside the arena, no two regions live at one launch sharing a byte).
/// Returns the first problem as an Error
/// (kind kManifest) whose message names the entry
/// ("programs[1].launches[3].args[2]: buffer index 400 out of range (310 buffers)").
Status validate_plan(const plan::Plan& p);

}  // namespace kern::load
