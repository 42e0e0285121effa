// Lowering (SPEC §5): a VerifiedManifest becomes the .kplan FlatBuffers
// bytes kern-load mmaps. Every name is resolved to an index, expressions are
// compiled into chains, each dispatch is flattened into one Launch per impl
// step with its arguments fully wired, cubins are deduplicated by path.
// Output is deterministic: the same manifest gives the same bytes.
// Lowering trusts the verifier (it only accepts a VerifiedManifest) and
// checks nothing itself.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "kern-verify/verifier.h"

namespace kern::verify {

/// Options of one lowering.
struct LowerOptions {
  /// True: workspace buffers and scratch share arena bytes by liveness
  /// (memory_planner.h). False (`kern-verify --no-memory-plan`): each region
  /// gets its own slot of the arena, the layout before planning.
  bool plan_memory = true;
};

/// Builds the plan for `manifest`. `manifest_bytes` is the exact file the
/// manifest was read from; its sha256 goes into Plan.manifest_sha256.
/// Returns the finished buffer (file identifier "KPLN", format_version
/// kPlanFormatVersion). Errors (kIo) only if hashing fails (OpenSSL).
Result<std::string> lower(const VerifiedManifest& manifest, std::string_view manifest_bytes,
                          const LowerOptions& options = {});

}  // namespace kern::verify
