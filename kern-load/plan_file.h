// A .kplan file opened for loading (SPEC §5): the bytes are read into memory
// (never mapped: a plan replaced or truncated under a running kern-run
// changes nothing, docs/runtime.md "Files that change"); the "KPLN" identifier and kPlanFormatVersion are
// checked first (the version from a shallow check of the root table), then
// the whole buffer by the FlatBuffers Verifier, then cross-checked by validate_plan
// (plan_validate.h) before anything else reads them. After open() succeeds
// every index in the plan is in range and every expression chain is
// well-formed, so the loader and the replay loop index without checks.
//
// Not checked here (the verifier's job, trusted after the checks above):
// data-flow rules, grid/block limits, literal ranges of scalar params.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/plan_format.h"
#include "common/result.h"

namespace kern::load {

/// A verified and validated plan. Move-only; plan() stays valid while it lives.
class PlanFile {
 public:
  /// Reads `path` (read_file: a regular file, at most
  /// FLATBUFFERS_MAX_BUFFER_SIZE) and validates it. Errors: kIo (cannot read),
  /// kManifest (not a kplan, wrong version, Verifier failure, bad index ...),
  /// each message starting with the path.
  static Result<PlanFile> open(const std::string& path);

  /// Validates a plan held in memory (tests, tools). `bytes` is copied;
  /// `name` is used in messages in place of a path.
  static Result<PlanFile> from_bytes(std::span<const uint8_t> bytes, const std::string& name);

  /// The root table (borrowed; valid while this object lives).
  const plan::Plan& plan() const { return *plan_; }
  /// The path (or name) the plan was opened from.
  const std::string& path() const { return path_; }
  /// The raw bytes (borrowed).
  std::span<const uint8_t> bytes() const;

  /// Index of the program / buffer / symbol / state named `name`, or -1.
  /// Linear scans for the cold path (setup), never for replay.
  int find_program(std::string_view name) const;
  int find_buffer(std::string_view name) const;
  int find_symbol(std::string_view name) const;
  int find_state(std::string_view name) const;

 private:
  static Result<PlanFile> check(PlanFile file);

  std::vector<uint8_t> owned_;        ///< the plan's bytes (operator new: aligned for every scalar)
  const plan::Plan* plan_ = nullptr;  ///< borrowed from owned_
  std::string path_;
};

/// Resource limits handed to flatbuffers::Verifier: nesting depth and table
/// count. Generous for real plans (Qwen3-4B has ~50k tables), small enough to
/// bound the work a hostile file can cause.
inline constexpr uint32_t kPlanVerifierMaxDepth = 64;
inline constexpr uint32_t kPlanVerifierMaxTables = 10'000'000;

}  // namespace kern::load
