// kern-verify's entry point: checks a manifest against every SPEC §4 rule and,
// when nothing is wrong, hands back a VerifiedManifest — the only input that
// lowering (lower.h) accepts, so nothing downstream re-checks.
//
// Trust boundary: the verifier proves the declarations are self-consistent
// (names resolve, types line up, launches fit CUDA limits at the symbol
// bounds, data flows). It cannot check kernel behaviour or what a param
// *means*; a cubin that lies about what it reads or writes is trusted, and the
// step ABI is compared with the real cubin only at load time (kern-load).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "common/manifest.h"

namespace kern::verify {

/// Name -> declaration index for every top-level section of a manifest
/// (declaration order, the order the plan uses). Heterogeneous lookup.
struct NameTables {
  std::map<std::string, uint32_t, std::less<>> symbols;
  std::map<std::string, uint32_t, std::less<>> states;
  std::map<std::string, uint32_t, std::less<>> buffers;
  std::map<std::string, uint32_t, std::less<>> kernels;

  /// Builds the tables; on a duplicate name the first declaration wins (the
  /// reader already rejects duplicates).
  static NameTables build(const Manifest& m);
};

/// Policy knobs of one verification (the rules themselves are fixed).
struct VerifyOptions {
  /// W0003 fires for a workspace buffer whose byte size at the symbols'
  /// maxima exceeds this many bytes (default 1 GiB).
  uint64_t workspace_warn_bytes = uint64_t{1} << 30;
};

/// A manifest that passed every check, plus the facts the verifier computed
/// and lowering needs. Only `verify` constructs one. Owns a copy of the
/// manifest, so the input may be destroyed afterwards.
class VerifiedManifest {
 public:
  const Manifest& manifest() const { return manifest_; }

  /// Index of a declared name; the verifier proved every reference resolves,
  /// so these are only called with existing names (they assert otherwise).
  uint32_t symbol_index(std::string_view name) const;
  uint32_t state_index(std::string_view name) const;
  uint32_t buffer_index(std::string_view name) const;
  uint32_t kernel_index(std::string_view name) const;

  /// Byte size of buffers[i] at the symbols' maxima (what the runtime allocates).
  uint64_t buffer_max_size_bytes(uint32_t buffer) const { return buffer_max_bytes_[buffer]; }

  /// Plan-wide index of scratch `s` of kernel `k` (kernels in declaration
  /// order, each kernel's scratch in declaration order).
  uint32_t scratch_index(uint32_t kernel, uint32_t scratch) const {
    return scratch_base_[kernel] + scratch;
  }
  /// Index of `name` within kernels[kernel].scratch (proved to exist).
  uint32_t scratch_local_index(uint32_t kernel, std::string_view name) const;
  /// Byte size of plan-wide scratch `i` at the symbols' maxima.
  uint64_t scratch_max_size_bytes(uint32_t scratch) const { return scratch_max_bytes_[scratch]; }
  /// Number of scratch declarations over all kernels.
  uint32_t scratch_count() const { return static_cast<uint32_t>(scratch_max_bytes_.size()); }

 private:
  friend std::optional<VerifiedManifest> verify(const Manifest& manifest, DiagnosticEngine& diag,
                                                const VerifyOptions& options);
  VerifiedManifest() = default;

  Manifest manifest_;
  NameTables names_;
  std::vector<uint64_t> buffer_max_bytes_;
  std::vector<uint32_t> scratch_base_;       ///< per kernel
  std::vector<uint64_t> scratch_max_bytes_;  ///< plan-wide scratch order
};

/// Runs every rule of SPEC §4 over `manifest`, reporting each finding into
/// `diag` (all of them, never stopping at the first; codes in codes.h).
/// The findings' spans carry byte offsets; the renderers fill their JSON
/// pointers (with_pointers, common/json_tree.h), and resolve_pointers(diag,
/// file) fills them in `diag` for callers that read them.
/// Returns the VerifiedManifest when no error was reported (warnings allowed;
/// `--deny-warnings` is the caller's policy), nullopt otherwise.
std::optional<VerifiedManifest> verify(const Manifest& manifest, DiagnosticEngine& diag,
                                       const VerifyOptions& options = {});

}  // namespace kern::verify
