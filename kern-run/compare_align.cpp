// Dispatch spans by label LCS (compare_align.h).
#include "kern-run/compare_align.h"

namespace kern::run {

std::vector<std::string> label_parts(std::string_view label) {
  std::vector<std::string> parts;
  size_t begin = 0;
  std::string prefix;
  while (true) {
    size_t plus = label.find('+', begin);
    std::string part(label.substr(begin, plus == std::string_view::npos ? std::string_view::npos : plus - begin));
    if (parts.empty()) {
      size_t dot = part.rfind('.');
      if (dot != std::string::npos) prefix = part.substr(0, dot + 1);
      parts.push_back(std::move(part));
    } else {
      parts.push_back(part.find('.') == std::string::npos ? prefix + part : part);
    }
    if (plus == std::string_view::npos) break;
    begin = plus + 1;
  }
  return parts;
}

namespace {

/// Every part of every label, with the dispatch it belongs to and whether it
/// is its dispatch's last part.
struct Parts {
  std::vector<std::string> text;
  std::vector<uint32_t> dispatch;
  std::vector<bool> last;
};

Parts flatten(const std::vector<std::string>& labels) {
  Parts p;
  for (uint32_t d = 0; d < labels.size(); ++d) {
    auto parts = label_parts(labels[d]);
    for (size_t i = 0; i < parts.size(); ++i) {
      p.text.push_back(std::move(parts[i]));
      p.dispatch.push_back(d);
      p.last.push_back(i + 1 == parts.size());
    }
  }
  return p;
}

}  // namespace

std::vector<DispatchSpan> align_dispatches(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<DispatchSpan> spans;
  if (a.empty() || b.empty()) return spans;
  const Parts pa = flatten(a), pb = flatten(b);
  const size_t n = pa.text.size(), m = pb.text.size();
  // lcs[i][j]: LCS length of pa[i..] and pb[j..] (suffixes, so the walk below goes forward).
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = pa.text[i] == pb.text[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  uint32_t a_first = 0, b_first = 0;
  size_t i = 0, j = 0;
  while (i < n && j < m) {
    if (pa.text[i] == pb.text[j]) {
      if (pa.last[i] && pb.last[j]) {  // both dispatches end here: a span boundary
        const uint32_t a_end = pa.dispatch[i] + 1, b_end = pb.dispatch[j] + 1;
        spans.push_back({a_first, a_end, b_first, b_end});
        a_first = a_end;
        b_first = b_end;
      }
      ++i;
      ++j;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      ++i;
    } else {
      ++j;
    }
  }
  const uint32_t na = static_cast<uint32_t>(a.size()), nb = static_cast<uint32_t>(b.size());
  if (a_first < na || b_first < nb) {
    if (a_first < na && b_first < nb) {
      spans.push_back({a_first, na, b_first, nb});
    } else if (!spans.empty()) {  // one side has dispatches left over: they join the last span
      spans.back().a_end = na;
      spans.back().b_end = nb;
    } else {
      spans.push_back({0, na, 0, nb});
    }
  }
  return spans;
}

std::vector<DispatchSpan> identity_spans(uint32_t n) {
  std::vector<DispatchSpan> spans;
  for (uint32_t d = 0; d < n; ++d) spans.push_back({d, d + 1, d, d + 1});
  return spans;
}

}  // namespace kern::run
