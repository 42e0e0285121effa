// Region and logit comparison for kern-run compare (compare_metrics.h).
#include "kern-run/compare_metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/bf16.h"

namespace kern::run {

const std::array<const char*, kUlpBins> kUlpBinLabels = {"0", "1", "2", "3-4", "5-8", "9-16", "17-64", ">64"};

namespace {

/// f16 bits -> f32, exactly (subnormals, inf and NaN kept).
float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  const float v = std::ldexp(static_cast<float>(mant), -24);  // subnormal or zero
  return sign != 0 ? -v : v;
}

size_t ulp_bin(uint32_t d) {
  if (d <= 2) return d;
  if (d <= 4) return 3;
  if (d <= 8) return 4;
  if (d <= 16) return 5;
  if (d <= 64) return 6;
  return 7;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Element i of `bytes` as a double (floating dtypes only).
double value_at(plan::DType dtype, const uint8_t* p) {
  switch (dtype) {
    case plan::DType::bf16: return bf16_to_f32(load<uint16_t>(p));
    case plan::DType::f16: return f16_to_f32(load<uint16_t>(p));
    default: return load<float>(p);
  }
}

/// An integer element as a double for the report (exact below 2^53).
double int_at(plan::DType dtype, const uint8_t* p) {
  switch (dtype) {
    case plan::DType::i32: return load<int32_t>(p);
    case plan::DType::u32: return load<uint32_t>(p);
    case plan::DType::i64: return static_cast<double>(load<int64_t>(p));
    default: return *p;
  }
}

uint32_t elem_size(plan::DType dtype) {
  switch (dtype) {
    case plan::DType::bf16:
    case plan::DType::f16: return 2;
    case plan::DType::f32:
    case plan::DType::i32:
    case plan::DType::u32: return 4;
    case plan::DType::i64: return 8;
    default: return 1;
  }
}

}  // namespace

uint32_t bf16_ulp_distance(uint16_t a, uint16_t b) {
  const bool nan_a = (a & 0x7fffu) > 0x7f80u, nan_b = (b & 0x7fffu) > 0x7f80u;
  if (nan_a || nan_b) return nan_a && nan_b ? 0 : UINT32_MAX;
  auto ordered = [](uint16_t v) { return (v & 0x8000u) ? -static_cast<int32_t>(v & 0x7fffu) : static_cast<int32_t>(v); };
  const int32_t d = ordered(a) - ordered(b);
  return static_cast<uint32_t>(d < 0 ? -d : d);
}

double bf16_ulp(double x) {
  x = std::fabs(x);
  if (!(x > 0) || !std::isfinite(x)) return std::ldexp(1.0, -133);
  int e = 0;
  std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  return std::ldexp(1.0, std::max(e - 1 - 7, -133));
}

void RegionDiff::merge(const RegionDiff& o) {
  if (!has_first && o.has_first) {
    has_first = true;
    first_index = o.first_index;
    first_a = o.first_a;
    first_b = o.first_b;
  }
  numel += o.numel;
  mismatches += o.mismatches;
  max_abs = std::max(max_abs, o.max_abs);
  max_rel = std::max(max_rel, o.max_rel);
  max_abs_a = std::max(max_abs_a, o.max_abs_a);
  for (size_t i = 0; i < kUlpBins; ++i) ulp_hist[i] += o.ulp_hist[i];
  within_tolerance = within_tolerance && o.within_tolerance;
  exact = exact || o.exact;
  sums.merge(o.sums);
}

RegionDiff compare_region(plan::DType dtype, std::span<const uint8_t> a, std::span<const uint8_t> b,
                          const Tolerance& tol, std::span<const uint8_t> before) {
  RegionDiff d;
  const uint32_t es = elem_size(dtype);
  const uint64_t n = std::min(a.size(), b.size()) / es;
  d.numel = n;
  const bool is_float = dtype == plan::DType::bf16 || dtype == plan::DType::f16 || dtype == plan::DType::f32;
  if (!is_float) {
    d.exact = true;
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t* pa = a.data() + i * es;
      const uint8_t* pb = b.data() + i * es;
      const double va = int_at(dtype, pa), vb = int_at(dtype, pb);
      d.max_abs_a = std::max(d.max_abs_a, std::fabs(va));
      if (std::memcmp(pa, pb, es) == 0) continue;
      ++d.mismatches;
      d.max_abs = std::max(d.max_abs, std::fabs(va - vb));
      if (va != 0) d.max_rel = std::max(d.max_rel, std::fabs(va - vb) / std::fabs(va));
      if (!d.has_first) {
        d.has_first = true;
        d.first_index = i;
        d.first_a = va;
        d.first_b = vb;
      }
    }
    d.within_tolerance = d.mismatches == 0;
    return d;
  }
  const double inf = std::numeric_limits<double>::infinity();
  for (uint64_t i = 0; i < n; ++i) {
    const double va = value_at(dtype, a.data() + i * es);
    if (std::isfinite(va)) d.max_abs_a = std::max(d.max_abs_a, std::fabs(va));
  }
  const double bound = tol.atol + tol.rtol * d.max_abs_a;
  const bool has_before = before.size() == a.size();
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t* pa = a.data() + i * es;
    const uint8_t* pb = b.data() + i * es;
    if (dtype == plan::DType::bf16) ++d.ulp_hist[ulp_bin(bf16_ulp_distance(load<uint16_t>(pa), load<uint16_t>(pb)))];
    const bool same = std::memcmp(pa, pb, es) == 0;
    const double va = value_at(dtype, pa), vb = value_at(dtype, pb);
    if (!has_before) {
      d.sums.add(va, vb, va);
    } else if (!same || std::memcmp(pa, before.data() + i * es, es) != 0) {
      d.sums.add(va, vb, va - value_at(dtype, before.data() + i * es));  // an element the span changed
    }
    if (same) continue;
    const bool both_nan = std::isnan(va) && std::isnan(vb);
    if (both_nan || va == vb) continue;  // NaN payloads, or +0 against -0
    ++d.mismatches;
    const double err = std::isfinite(va) && std::isfinite(vb) ? std::fabs(va - vb) : inf;
    d.max_abs = std::max(d.max_abs, err);
    if (va != 0) d.max_rel = std::max(d.max_rel, err / std::fabs(va));
    if (!(err <= bound)) d.within_tolerance = false;
    if (!d.has_first) {
      d.has_first = true;
      d.first_index = i;
      d.first_a = va;
      d.first_b = vb;
    }
  }
  return d;
}

StepLogits compare_logits(plan::DType dtype, std::span<const uint8_t> a, std::span<const uint8_t> b, uint64_t vocab) {
  StepLogits s;
  const uint32_t es = elem_size(dtype);
  vocab = std::min<uint64_t>(vocab, std::min(a.size(), b.size()) / es);
  if (vocab == 0) return s;
  std::vector<double> la(vocab), lb(vocab);
  for (uint64_t i = 0; i < vocab; ++i) {
    la[i] = value_at(dtype, a.data() + i * es);
    lb[i] = value_at(dtype, b.data() + i * es);
  }
  s.a_argmax = std::max_element(la.begin(), la.end()) - la.begin();
  s.b_argmax = std::max_element(lb.begin(), lb.end()) - lb.begin();
  const auto [mn, mx] = std::minmax_element(la.begin(), la.end());
  s.a_spread = *mx - *mn;
  double diff2 = 0;
  uint64_t others = 0;
  for (uint64_t i = 0; i < vocab; ++i) {
    if (static_cast<int64_t>(i) == s.a_argmax || static_cast<int64_t>(i) == s.b_argmax) continue;
    diff2 += (lb[i] - la[i]) * (lb[i] - la[i]);
    ++others;
  }
  s.rms_diff = others > 0 ? std::sqrt(diff2 / static_cast<double>(others)) : 0;
  bool finite = true;
  for (uint64_t i = 0; i < vocab; ++i) finite = finite && std::isfinite(la[i]) && std::isfinite(lb[i]);
  if (!finite) {
    s.kl = std::numeric_limits<double>::infinity();
  } else {
    // log-softmax in double: log p = x - max - log(sum exp(x - max)).
    auto log_sum = [](const std::vector<double>& x, double top) {
      double sum = 0;
      for (double v : x) sum += std::exp(v - top);
      return std::log(sum);
    };
    const double ma = *mx, mb = *std::max_element(lb.begin(), lb.end());
    const double za = log_sum(la, ma), zb = log_sum(lb, mb);
    double kl = 0;
    for (uint64_t i = 0; i < vocab; ++i) {
      const double lpa = la[i] - ma - za, lpb = lb[i] - mb - zb;
      kl += std::exp(lpa) * (lpa - lpb);
    }
    s.kl = std::max(0.0, kl);  // rounding can leave -1e-17 for equal rows
  }
  if (s.a_argmax != s.b_argmax) {
    const double top = la[static_cast<size_t>(s.a_argmax)], other = la[static_cast<size_t>(s.b_argmax)];
    s.a_gap = top - other;
    s.near_tie = s.a_gap <= 0.005 * s.a_spread ||
                 s.a_gap <= bf16_ulp(std::max(std::fabs(top), std::fabs(other))) ||
                 s.a_gap <= kNearTieRmsDiffs * s.rms_diff;
  }
  return s;
}

}  // namespace kern::run
