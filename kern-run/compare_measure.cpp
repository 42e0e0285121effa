// The span replay measure (compare_measure.h).
#include "kern-run/compare_measure.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kern::run {

void ReplaySums::add(double a, double b, double u) {
  ++numel;
  if (!std::isfinite(a) || !std::isfinite(b)) {
    // Both NaN, or the same infinity, is no difference; anything else is.
    if (!(std::isnan(a) && std::isnan(b)) && a != b) nonfinite = true;
    return;
  }
  const double d = b - a;
  err2 += d * d;
  ref2 += a * a;
  if (std::isfinite(u)) {
    err_upd += d * u;
    upd2 += u * u;
    err_upd2 += (d * u) * (d * u);
  }
}

void ReplaySums::merge(const ReplaySums& o) {
  numel += o.numel;
  err2 += o.err2;
  ref2 += o.ref2;
  err_upd += o.err_upd;
  upd2 += o.upd2;
  err_upd2 += o.err_upd2;
  nonfinite = nonfinite || o.nonfinite;
}

const char* replay_class_name(ReplayClass c) {
  switch (c) {
    case ReplayClass::kRounding: return "rounding";
    case ReplayClass::kUnclear: return "unclear";
    case ReplayClass::kSystematic: return "systematic";
  }
  return "systematic";
}

ReplayClass classify_replay(double rel_l2, double scale_bias, double bias_z) {
  ReplayClass by_l2 = ReplayClass::kRounding;
  if (!(rel_l2 <= kSystematicRelL2)) by_l2 = ReplayClass::kSystematic;  // NaN too
  else if (rel_l2 > kRoundingRelL2) by_l2 = ReplayClass::kUnclear;
  ReplayClass by_bias = ReplayClass::kRounding;
  if (std::fabs(bias_z) >= kBiasZ) {
    if (std::fabs(scale_bias) > kSystematicScaleBias) by_bias = ReplayClass::kSystematic;
    else if (std::fabs(scale_bias) > kRoundingScaleBias) by_bias = ReplayClass::kUnclear;
  }
  return std::max(by_l2, by_bias);
}

ReplayMeasure replay_measure(const ReplaySums& s, double atol) {
  ReplayMeasure m;
  m.numel = s.numel;
  if (s.nonfinite) {
    m.rel_l2 = std::numeric_limits<double>::infinity();
    m.cls = ReplayClass::kSystematic;
    return m;
  }
  const double floor = atol * atol * static_cast<double>(s.numel);
  const double denom = std::max(s.ref2, floor);
  m.rel_l2 = s.err2 == 0 ? 0 : denom > 0 ? std::sqrt(s.err2 / denom) : std::numeric_limits<double>::infinity();
  m.scale_bias = s.upd2 > 0 ? s.err_upd / s.upd2 : 0;
  m.bias_z = s.err_upd2 > 0 ? s.err_upd / std::sqrt(s.err_upd2) : 0;
  m.cls = classify_replay(m.rel_l2, m.scale_bias, m.bias_z);
  return m;
}

ReplayMeasure exact_measure(uint64_t numel, uint64_t mismatches) {
  ReplayMeasure m;
  m.numel = numel;
  if (mismatches > 0) {
    m.rel_l2 = std::numeric_limits<double>::infinity();
    m.cls = ReplayClass::kSystematic;
  }
  return m;
}

}  // namespace kern::run
