// The verdict and report of `kern-run compare` (docs/compare.md "Noise
// floor and verdict" and "Reading the report"). In order:
// - INCONCLUSIVE when the noise floor (A against its own second run)
//   reaches half the KL threshold or flips a token outside a near-tie;
// - FAIL when a span's replay measure is systematic (compare_measure.h):
//   B's span computes another function, whatever the logits say; the
//   reason names the first such span by its dispatch labels;
// - FAIL when a decode step's KL(A||B) reaches the threshold or an argmax
//   flip is not a near-tie, naming the first span past tolerance (span
//   replay first: it isolates one span's kernels; then the free run);
// - INCONCLUSIVE when a span's replay measure is unclear (between the
//   rounding and the systematic thresholds);
// - PASS otherwise.
// The text table goes to stdout, or one JSON object with --json.
#pragma once

#include <optional>
#include <string>

#include "kern-run/compare_session.h"

namespace kern::run {

enum class Verdict { kPass, kFail, kInconclusive };

/// The verdict with its one-line reason.
struct VerdictResult {
  Verdict verdict = Verdict::kPass;
  std::string reason;
  std::optional<size_t> first_bad_span;  ///< index into CompareResult::spans
  std::string first_bad_mode;            ///< "span replay" or "free run"
  /// The span was named by its replay measure (systematic or unclear), not
  /// by the tolerance; then `first_bad_region` indexes its worst region.
  bool by_measure = false;
  size_t first_bad_region = 0;
  double max_kl = 0, floor_max_kl = 0;
  uint64_t flips = 0, near_ties = 0;
};

/// Judges `r` against `kl_threshold` (nats).
VerdictResult judge(const CompareResult& r, double kl_threshold);

/// The verdict's exit code: PASS 0, FAIL 1, INCONCLUSIVE 3 (any error
/// before a verdict exits 2).
int verdict_exit_code(Verdict v);
/// "PASS", "FAIL", "INCONCLUSIVE".
const char* verdict_name(Verdict v);

/// The human report: header, span table, the first span past tolerance in
/// detail, the decode-step table, the verdict line. Ends with a newline.
std::string render_compare_text(const CompareResult& r, const VerdictResult& v, const CompareConfig& cfg);
/// Everything as one JSON object (non-finite numbers as null), no newline.
std::string render_compare_json(const CompareResult& r, const VerdictResult& v, const CompareConfig& cfg);

}  // namespace kern::run
