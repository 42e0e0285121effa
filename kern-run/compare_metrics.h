// The numbers `kern-run compare` reports (docs/compare.md "Reading the
// report"): how two copies of one region differ element by element (max
// absolute and relative error, the bf16 ulp histogram, the first differing
// element, a tolerance verdict), and how two decode steps' logits differ
// (KL(A||B) of their softmax, an argmax flip and whether it is a near-tie),
// with the sums the span replay measure needs (compare_measure.h).
// Pure functions on host bytes; they never fail (bytes of unequal length
// compare over the shorter, and say so through `numel`).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "common/plan_format.h"
#include "kern-run/compare_measure.h"

namespace kern::run {

/// Bins of the bf16 ulp-distance histogram: 0, 1, 2, 3-4, 5-8, 9-16,
/// 17-64, more than 64 (NaN against a number counts as more than 64).
inline constexpr size_t kUlpBins = 8;
/// The bins' labels, for reports ("0", "1", "2", "3-4", ...).
extern const std::array<const char*, kUlpBins> kUlpBinLabels;

/// When two floating-point copies of a region agree: every element within
/// `atol` + `rtol` x (the largest |A| in the region). Scaled by the region's
/// largest magnitude, not the element's, so cancellation near zero (a dot
/// product summed in another order) is not an error. Integers must be equal.
struct Tolerance {
  double rtol = 1.0 / 32;  ///< about 4 bf16 ulps of the region's largest value
  double atol = 1e-3;
};

/// How copy B of a region differs from copy A.
struct RegionDiff {
  uint64_t numel = 0;       ///< elements compared
  uint64_t mismatches = 0;  ///< elements not bit-identical
  double max_abs = 0;       ///< max |a - b| (infinity where one side is NaN/inf and the other not)
  double max_rel = 0;       ///< max |a - b| / |a| over elements with a != 0
  double max_abs_a = 0;     ///< the region's largest |a| (the tolerance's scale)
  std::array<uint64_t, kUlpBins> ulp_hist{};  ///< bf16 regions only
  bool has_first = false;   ///< a first differing element exists
  uint64_t first_index = 0; ///< its element index
  double first_a = 0, first_b = 0;
  bool within_tolerance = true;
  bool exact = false;       ///< compared bit for bit (integers): `sums` unused
  ReplaySums sums;          ///< floating dtypes: the replay measure's sums

  /// Folds `o` (the same region at another step) into this: maxima, sums, and the first difference kept.
  void merge(const RegionDiff& o);
};

/// Compares `a` and `b` (raw bytes of `dtype` elements, little-endian).
/// bf16, f16 and f32 are compared as numbers (f16 widened exactly), the
/// ulp histogram filled for bf16; every other dtype bit for bit. `before`,
/// when as long as `a`: A's bytes of the region before the span, for a
/// region the span reads and writes; the measure's sums then leave out the
/// elements neither side changed and take the change a - before as u
/// (compare_measure.h), else u = a.
RegionDiff compare_region(plan::DType dtype, std::span<const uint8_t> a, std::span<const uint8_t> b,
                          const Tolerance& tol, std::span<const uint8_t> before = {});

/// Distance in bf16 ulps between two bf16 bit patterns (ordered-integer
/// difference; +0 and -0 are 0 apart); UINT32_MAX when exactly one is NaN.
uint32_t bf16_ulp_distance(uint16_t a, uint16_t b);

/// A flip is also a near-tie when A's gap is within this many times the
/// step's RMS logit difference (rms_diff): B's free run has drifted by
/// rounding that far, so a gap that small flips by noise (the valid pairs'
/// flips in docs/compare.md "Calibration" reached 3.1 times it).
inline constexpr double kNearTieRmsDiffs = 4;

/// One decode step's logits compared.
struct StepLogits {
  double kl = 0;            ///< KL(A||B) in nats of softmax(A) and softmax(B), in double
  int64_t a_argmax = 0;     ///< argmax of A's logits (lowest index on ties)
  int64_t b_argmax = 0;
  double a_gap = 0;         ///< A's logit at a_argmax minus A's logit at b_argmax (>= 0)
  double a_spread = 0;      ///< max - min of A's logits
  /// Root mean square of B - A over the row but the two argmaxes: the free
  /// run's logit error, not counting the pair that flipped.
  double rms_diff = 0;
  /// A flip whose gap is within 0.5 % of the spread, one bf16 ulp of the
  /// larger logit, or kNearTieRmsDiffs x rms_diff.
  bool near_tie = false;
};

/// Compares two rows of `vocab` logits of `dtype` (bf16 or f32). Non-finite
/// logits make kl infinite.
StepLogits compare_logits(plan::DType dtype, std::span<const uint8_t> a, std::span<const uint8_t> b, uint64_t vocab);

/// One bf16 ulp at |x| (the spacing of bf16 values there; 2^-133 at 0).
double bf16_ulp(double x);

}  // namespace kern::run
