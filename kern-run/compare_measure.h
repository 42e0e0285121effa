// The span replay measure of `kern-run compare` (docs/compare.md "The
// replay measure"): whether B's copy of a region, computed in span replay
// from A's inputs and state, differs from A's by rounding or because B's
// span computes another function. Two numbers per region, over every run of
// the span:
// - the relative L2 error ||b - a|| / ||a||: rounding in bf16 (8 significant
//   bits) keeps it near one unit roundoff, 2^-8 = 0.0039, whatever order a
//   kernel sums in; a wrong constant, table or index moves it far past that;
// - the scale bias beta = sum (b - a) u / sum u^2 (u: what the span changed,
//   a - A's value before the span for a region the span reads and writes,
//   else a) with its z-score sum (b - a) u / sqrt(sum ((b - a) u)^2):
//   rounding errors are as often up as down, so their bias stays near 0; a
//   scale error (a wrong eps, a factor off by 1 %) moves every element the
//   same way, and its z grows with the elements measured.
// The thresholds are named constants calibrated on pairs that must pass and
// planted errors that must fail (docs/compare.md "Calibration").
#pragma once

#include <cstdint>

namespace kern::run {

/// Relative L2 error at or under this is rounding (the largest of the
/// pairs that must pass measured 0.0066: bf16 rounding of intermediates).
inline constexpr double kRoundingRelL2 = 0.01;
/// Relative L2 error above this is systematic: B's span computes something
/// else. Between the two the measure cannot tell (INCONCLUSIVE).
inline constexpr double kSystematicRelL2 = 0.02;
/// A scale bias counts only at a |z-score| of at least this (rounding's
/// measured |z| stayed under 3.8).
inline constexpr double kBiasZ = 5;
/// A counted scale bias at or under this is rounding: an eighth of a bf16
/// ulp (2^-11); the pairs that must pass stayed under 0.0017 at any z.
inline constexpr double kRoundingScaleBias = 0.0005;
/// A counted scale bias above this is systematic: one bf16 ulp (2^-8);
/// between the two, INCONCLUSIVE.
inline constexpr double kSystematicScaleBias = 0.004;

/// Sums over the measured elements of one region (see the file comment).
/// An element of a region the span reads and writes that neither side
/// changed (a == A's value before == b: a KV cache's other positions) is
/// not measured.
struct ReplaySums {
  uint64_t numel = 0;
  double err2 = 0;      ///< sum (b - a)^2
  double ref2 = 0;      ///< sum a^2
  double err_upd = 0;   ///< sum (b - a) u
  double upd2 = 0;      ///< sum u^2
  double err_upd2 = 0;  ///< sum ((b - a) u)^2
  bool nonfinite = false;  ///< an element finite on one side only, or NaN against a number

  /// Adds one element: A's value `a`, B's `b`, the change `u` A's span made.
  void add(double a, double b, double u);
  /// Adds `o`'s sums (the same region at another run).
  void merge(const ReplaySums& o);
};

/// What the measure says of a region.
enum class ReplayClass { kRounding, kUnclear, kSystematic };

/// "rounding", "unclear", "systematic".
const char* replay_class_name(ReplayClass c);

/// The measure of one region.
struct ReplayMeasure {
  uint64_t numel = 0;     ///< elements measured
  double rel_l2 = 0;      ///< ||b - a|| / max(||a||, atol sqrt(numel)); infinite when nonfinite
  double scale_bias = 0;  ///< beta (0 when nothing changed)
  double bias_z = 0;      ///< beta's z-score (0 when b == a)
  ReplayClass cls = ReplayClass::kRounding;
};

/// The measure from `s`: `atol` bounds the denominator below, so a region
/// that is all (near) zero on A does not divide by zero.
ReplayMeasure replay_measure(const ReplaySums& s, double atol);

/// An integer region's measure: any difference is systematic (ids,
/// positions and counters have no rounding).
ReplayMeasure exact_measure(uint64_t numel, uint64_t mismatches);

/// The class of a measure by the thresholds above (rel_l2 first, then the
/// scale bias when |bias_z| >= kBiasZ; the worse of the two).
ReplayClass classify_replay(double rel_l2, double scale_bias, double bias_z);

}  // namespace kern::run
