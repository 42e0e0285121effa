// `kern-verify --dump`: a readable listing of a .kplan for debugging (SPEC
// §2). The bytes are untrusted: the FlatBuffers Verifier, the file
// identifier and the format version are checked before anything is read.
// The listing is for people; its layout may change (golden tests pin it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/result.h"

namespace kern::verify {

/// Renders `plan_bytes` as text: header (format, model, manifest sha256),
/// symbols with bounds, states, buffers (class, dtype, shape, bytes at the
/// maxima; counts per class), cubins, kernels with their steps (symbol,
/// cubin, params, block, grid and shared-memory expressions), scratch, each
/// program's dispatch count and launches with wired args, the memory by
/// class (weights, states per token and at `capacity` tokens when given,
/// io, workspace, scratch, the arena after and before planning and its peak
/// live bytes, the total) and a summary line with buffer and dispatch
/// counts per program. Workspace buffers and scratch show their arena offset.
/// Errors (kManifest): not a FlatBuffers plan (Verifier fails), wrong file
/// identifier, unsupported format_version, an index out of range.
Result<std::string> dump_plan(std::span<const uint8_t> plan_bytes, std::optional<uint64_t> capacity = {});

/// The same plan as one JSON object and a newline (`--dump PLAN
/// --message-format json`; the shape is docs/plan-format.md "JSON dump"):
/// format_version, model, manifest_sha256, spec, then arrays symbols,
/// states, buffers (with arena_offset for workspace), cubins, kernels (step
/// indices), steps, scratch and programs (launches with their args, and
/// buffers_used), the memory object and kern's version. Expressions are
/// strings in the manifest's syntax. Same errors as dump_plan.
Result<std::string> dump_plan_json(std::span<const uint8_t> plan_bytes, std::optional<uint64_t> capacity = {});

}  // namespace kern::verify
