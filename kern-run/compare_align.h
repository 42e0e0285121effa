// How `kern-run compare` pairs two programs' dispatches into spans
// (docs/compare.md "Spans"): fused dispatch labels are compounds
// ("layers.0.input_layernorm+qkv_proj"), so each label is split on '+' into
// parts (a part without a '.' takes the first part's prefix: "layers.0.");
// the two part lists are matched as a longest common subsequence (labels
// repeat per layer, so a greedy scan would drift), and a span ends after
// every matched pair that ends a dispatch on both sides. Each span is then
// the smallest group of whole dispatches of A and of B that compute the
// same parts of the model. Pure functions on labels; no plan access.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kern::run {

/// Dispatches [a_first, a_end) of A and [b_first, b_end) of B (dispatch
/// indices of one program each); both ranges non-empty.
struct DispatchSpan {
  uint32_t a_first = 0, a_end = 0;
  uint32_t b_first = 0, b_end = 0;
};

/// The parts of one dispatch label: "layers.0.qk_norm+rope" ->
/// {"layers.0.qk_norm", "layers.0.rope"}; "norm+lm_head" -> {"norm",
/// "lm_head"}; "" -> {""}. A later part already holding a '.' is kept as it is.
std::vector<std::string> label_parts(std::string_view label);

/// Aligns two programs' dispatch labels into spans covering every dispatch
/// of both, in order. Identical label lists give one span per dispatch; two
/// lists with nothing in common give one span of everything; an empty list
/// on either side gives no spans.
std::vector<DispatchSpan> align_dispatches(const std::vector<std::string>& a, const std::vector<std::string>& b);

/// One span per dispatch (one plan on two devices): n spans.
std::vector<DispatchSpan> identity_spans(uint32_t n);

}  // namespace kern::run
