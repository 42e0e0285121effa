// The verdict and report of `kern-run compare` (docs/compare.md "Verdict"
// and "Reading the report"). The verdict comes from the end-to-end decode
// steps: PASS when every step's KL(A||B) is under the threshold and every
// argmax flip is a near-tie; INCONCLUSIVE when the noise floor (A against
// its own second run) reaches half the threshold or flips a token outside a
// near-tie, since then the threshold cannot separate A from B; FAIL
// otherwise, naming the first span past tolerance (span replay first: it
// isolates one span's kernels; then the free run). The text table goes to
// stdout, or one JSON object with --json.
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
