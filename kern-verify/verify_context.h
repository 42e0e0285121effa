// Shared state of one verification run (internal to kern-verify): the
// manifest, the diagnostics engine, name tables, facts earlier rules computed
// (sizes at the symbol bounds) and the poison/usage flags that keep later rules
// quiet about consequences of an error already reported.
//
// Poisoning: a subject whose declaration is broken (a symbol with inverted
// bounds, a buffer whose shape does not resolve) is marked not-ok; checks that
// depend on it skip silently instead of cascading.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "common/manifest.h"
#include "kern-verify/codes.h"
#include "kern-verify/verifier.h"

namespace kern::verify {

/// Inclusive range of a value over the symbols' bounds [min, max].
struct Range {
  uint64_t min = 0;
  uint64_t max = 0;
};

/// Per-kernel facts (indexed like Manifest::kernels).
struct KernelFacts {
  /// Byte size of each scratch at the symbols' minima / maxima; nullopt when
  /// its shape did not resolve (poisoned).
  std::vector<std::optional<Range>> scratch_bytes;
  std::vector<bool> scratch_used;
  /// Per step: args count matched params, so position-wise checks ran (rule 5).
  std::vector<bool> step_wiring_ok;
  /// Some step arg failed to resolve (bad index, unknown scratch, count):
  /// rule 6 cannot tell what the impl writes and skips E0134.
  bool wiring_poisoned = false;
};

/// One verification run. Rule files (verify_*.cpp) read and extend it.
class Context {
 public:
  Context(const Manifest& manifest, DiagnosticEngine& diag, const VerifyOptions& options = {});

  const Manifest& m;
  DiagnosticEngine& diag;
  VerifyOptions options;
  NameTables names;

  std::vector<bool> symbol_ok;  ///< false: bounds inverted (rule 2), poisoned
  std::vector<std::optional<Range>> buffer_bytes;  ///< byte size at min/max; nullopt = poisoned
  std::vector<KernelFacts> kernels;
  /// Per program, per dispatch: kernel resolved and args matched the
  /// interface in count (rule 7), so rule 8 can trust the param directions.
  std::vector<std::vector<bool>> dispatch_ok;

  std::vector<bool> symbol_used, state_used, buffer_used, kernel_used;
  /// Work spent on "did you mean" suggestions so far (bounded; see add_help).
  size_t suggestion_work = 0;

  /// Records an error / warning with the catalogue's code, with
  /// `arg_param_note` attached when one is set and the code is not an
  /// unknown-name error (E0105/E0112/E0113: about the name, not the param).
  Diagnostic& error(Code code, std::string message, const SourceSpan& span);
  Diagnostic& warning(Code code, std::string message, const SourceSpan& span);

  /// Set while one dispatch argument is checked against its kernel param
  /// (rule 7): "param j of `k` is declared here", for every finding about it.
  std::optional<DiagnosticNote> arg_param_note;

  /// Resolve a reference, marking it used; an unknown name is reported
  /// (E0105/E0111/E0112/E0113) at `span` with a closest-name help and nullopt
  /// is returned. `subject` names where the reference was written.
  std::optional<uint32_t> resolve_symbol(const std::string& name, const SourceSpan& span,
                                         const std::string& subject);
  std::optional<uint32_t> resolve_state(const std::string& name, const SourceSpan& span,
                                        const std::string& subject);
  std::optional<uint32_t> resolve_buffer(const std::string& name, const SourceSpan& span,
                                         const std::string& subject);
  std::optional<uint32_t> resolve_kernel(const std::string& name, const SourceSpan& span,
                                         const std::string& subject);

  /// Range of `e` over the symbols' bounds (expressions are monotone: sym,
  /// mul by a constant and ceil_div by a constant never decrease). Reports
  /// unknown symbols (E0105), overflow at the maxima (E0109), ceil_div by
  /// zero (E0110) and mul by zero (E0159); nullopt after such an error or when a symbol is poisoned.
  std::optional<Range> eval_range(const Expr& e, const std::string& subject);

  /// Byte size of `dtype` x `shape` at the symbols' minima and maxima.
  /// Reports an empty shape (E0106), a zero dimension (E0107), unknown
  /// symbols (E0105) and overflow at the maxima (E0108) against `subject`.
  std::optional<Range> shape_bytes(DType dtype, const std::vector<Dim>& shape,
                                   const SourceSpan& span, const std::string& subject);
};

/// "kernels.NAME" / "kernels.NAME.impl.steps[i]" / "programs.NAME.dispatches[i]":
/// the subject prefix of diagnostics (style.md §3).
std::string kernel_subject(const Kernel& k);
std::string step_subject(const Kernel& k, size_t step);
std::string dispatch_subject(const Program& p, size_t dispatch);

/// The candidate closest to `name` by edit distance, when close enough to be
/// a plausible typo (distance <= max(1, len/3)); nullopt otherwise.
std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string_view>& candidates);

/// "a" for an arg kind, used in messages: "buffer", "state", "symbol", ...
std::string_view arg_kind_name(Arg::Kind k);
std::string_view step_arg_kind_name(StepArg::Kind k);

}  // namespace kern::verify
