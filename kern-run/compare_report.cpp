// kern-run compare's verdict and text report (compare_report.h; the JSON is compare_json.cpp).
#include "kern-run/compare_report.h"

#include <algorithm>
#include <cmath>

#include "common/terminal_text.h"
#include "kern-run/number_text.h"

namespace kern::run {

namespace {

/// "decode span 4 'layers.0.attention'" (one label list on both sides) or
/// "decode span 4 (A: a1, a2; B: b1, b2)": every label, verbatim.
std::string span_name(const SpanResult& s) {
  auto list = [](const std::vector<std::string>& v) {
    std::string o;
    for (const auto& x : v) o += (o.empty() ? "" : ", ") + x;
    return o;
  };
  std::string o = s.program + " span " + std::to_string(s.index);
  if (s.a_labels == s.b_labels || s.a_labels.empty()) return o + " '" + list(s.b_labels) + "'";
  return o + " (A: " + list(s.a_labels) + "; B: " + list(s.b_labels) + ")";
}

std::string g4(double v) { return std::isfinite(v) ? format_double("%.4g", v) : "inf"; }

/// Why a measure is not rounding: "rel L2 0.0204 > 0.02; scale bias -0.0181 (z -15.2) beyond 0.004".
std::string measure_why(const ReplayMeasure& m) {
  std::string o = "rel L2 " + g4(m.rel_l2);
  if (!(m.rel_l2 <= kSystematicRelL2)) o += " > " + format_double("%g", kSystematicRelL2);
  else if (m.rel_l2 > kRoundingRelL2) o += " > " + format_double("%g", kRoundingRelL2);
  o += ", scale bias " + g4(m.scale_bias) + " (z " + format_double("%.1f", m.bias_z) + ")";
  if (std::fabs(m.bias_z) >= kBiasZ) {
    if (std::fabs(m.scale_bias) > kSystematicScaleBias)
      o += " beyond " + format_double("%g", kSystematicScaleBias);
    else if (std::fabs(m.scale_bias) > kRoundingScaleBias)
      o += " beyond " + format_double("%g", kRoundingScaleBias);
  }
  return o;
}

}  // namespace

VerdictResult judge(const CompareResult& r, double kl_threshold) {
  VerdictResult v;
  uint64_t floor_bad_flips = 0;
  std::optional<size_t> bad_step;
  std::string bad_why;
  for (size_t k = 0; k < r.steps.size(); ++k) {
    const StepResult& s = r.steps[k];
    v.max_kl = std::max(v.max_kl, s.logits.kl);
    v.floor_max_kl = std::max(v.floor_max_kl, s.floor.kl);
    if (s.floor.a_argmax != s.floor.b_argmax && !s.floor.near_tie) ++floor_bad_flips;
    const bool flip = s.logits.a_argmax != s.logits.b_argmax;
    if (flip) ++v.flips;
    if (flip && s.logits.near_tie) ++v.near_ties;
    if (bad_step) continue;
    if (!(s.logits.kl < kl_threshold)) {
      bad_step = k;
      bad_why = "decode step " + std::to_string(k) + ": KL " + format_double("%.3g", s.logits.kl) + " >= " +
                format_double("%g", kl_threshold);
    } else if (flip && !s.logits.near_tie) {
      bad_step = k;
      bad_why = "decode step " + std::to_string(k) + ": argmax " + std::to_string(s.logits.a_argmax) + " -> " +
                std::to_string(s.logits.b_argmax) + " is not a near-tie (A's gap " +
                format_double("%.4g", s.logits.a_gap) + ", spread " + format_double("%.4g", s.logits.a_spread) + ")";
    }
  }
  std::optional<size_t> systematic, unclear;
  for (size_t i = 0; i < r.spans.size(); ++i) {
    const ReplayClass c = r.spans[i].replay_class();
    if (c == ReplayClass::kSystematic && !systematic) systematic = i;
    if (c == ReplayClass::kUnclear && !unclear) unclear = i;
  }
  for (size_t i = 0; i < r.spans.size() && !v.first_bad_span; ++i)
    if (!r.spans[i].replay_ok()) v.first_bad_span = i, v.first_bad_mode = "span replay";
  for (size_t i = 0; i < r.spans.size() && !v.first_bad_span; ++i)
    if (!r.spans[i].free_ok()) v.first_bad_span = i, v.first_bad_mode = "free run";
  auto name_by_measure = [&](size_t i) {
    const SpanResult& s = r.spans[i];
    const RegionResult* w = s.worst_region();
    v.first_bad_span = i;
    v.first_bad_mode = "span replay";
    v.by_measure = true;
    v.first_bad_region = static_cast<size_t>(w - s.regions.data());
    return span_name(s) + ": " + w->name + " " + measure_why(w->measure);
  };
  if (v.floor_max_kl >= kl_threshold / 2 || floor_bad_flips > 0) {
    v.verdict = Verdict::kInconclusive;
    v.reason = "the noise floor (A against its second run) is too high: max KL " +
               format_double("%.3g", v.floor_max_kl) + " (half the threshold: " +
               format_double("%g", kl_threshold / 2) + "), " + std::to_string(floor_bad_flips) +
               " flips outside a near-tie";
    return v;
  }
  if (systematic) {
    v.verdict = Verdict::kFail;
    v.reason = "span replay: " + name_by_measure(*systematic) + ": B computes something else there" +
               (bad_step ? "; " + bad_why : "; max KL " + format_double("%.3g", v.max_kl));
    return v;
  }
  if (bad_step) {
    v.verdict = Verdict::kFail;
    v.reason = bad_why;
    if (v.first_bad_span) {
      v.reason += "; first span past tolerance (" + v.first_bad_mode + "): " + span_name(r.spans[*v.first_bad_span]);
    } else {
      v.reason += "; no single span is past tolerance (the error builds up over spans)";
    }
    return v;
  }
  if (unclear) {
    v.verdict = Verdict::kInconclusive;
    v.reason = "span replay: " + name_by_measure(*unclear) +
               ": more than rounding, too little to call systematic; max KL " + format_double("%.3g", v.max_kl);
    return v;
  }
  v.verdict = Verdict::kPass;
  v.reason = "every span's replay within rounding; max KL " + format_double("%.3g", v.max_kl) + " < " +
             format_double("%g", kl_threshold) + "; " + std::to_string(v.flips) + " flips, " +
             std::to_string(v.near_ties) + " near-ties; floor " + format_double("%.3g", v.floor_max_kl);
  return v;
}

int verdict_exit_code(Verdict v) {
  switch (v) {
    case Verdict::kPass: return 0;
    case Verdict::kFail: return 1;
    case Verdict::kInconclusive: return 3;
  }
  return 1;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kInconclusive: return "INCONCLUSIVE";
  }
  return "FAIL";
}

namespace {

std::string join(const std::vector<std::string>& v, size_t max_chars) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  s = terminal_safe(s);
  if (s.size() > max_chars) s = s.substr(0, max_chars - 3) + "...";
  return s;
}

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

/// The span's worst region in a mode: (max abs, ulps beyond 2, region name).
struct Worst {
  double max_abs = 0;
  uint64_t far_ulps = 0;
};

Worst worst(const SpanResult& s, bool replay) {
  Worst w;
  for (const auto& reg : s.regions) {
    const RegionDiff& d = replay ? reg.replay : reg.free;
    w.max_abs = std::max(w.max_abs, d.max_abs);
    for (size_t b = 3; b < kUlpBins; ++b) w.far_ulps += d.ulp_hist[b];
  }
  return w;
}

std::string num(double v) { return std::isfinite(v) ? format_double("%.3g", v) : "inf"; }

std::string region_line(const RegionResult& reg, const RegionDiff& d, const std::string& at) {
  std::string line = "  " + reg.name + " (" + reg.dtype + ", " + std::to_string(d.numel) + " elements over the runs): " +
                     "max abs " + num(d.max_abs) + ", max rel " + num(d.max_rel) + ", " +
                     std::to_string(d.mismatches) + " differ";
  if (d.has_first)
    line += "; first at element " + std::to_string(d.first_index) + " (" + at + "): A " +
            format_double("%.6g", d.first_a) + ", B " + format_double("%.6g", d.first_b);
  if (reg.dtype == "bf16") {
    line += "; ulps";
    for (size_t b = 0; b < kUlpBins; ++b)
      if (d.ulp_hist[b] > 0) line += std::string(" ") + kUlpBinLabels[b] + ":" + std::to_string(d.ulp_hist[b]);
  }
  if (!d.within_tolerance) line += "  PAST TOLERANCE";
  return line + "\n";
}

/// "0.0204 systematic" / "0 rounding" / "-" (no judged region): a span's replay measure column.
std::string measure_cell(const SpanResult& s) {
  const RegionResult* w = s.worst_region();
  if (w == nullptr) return "-";
  return num(w->measure.rel_l2) + " " + format_double("%+.2g", w->measure.scale_bias) + " (" +
         format_double("%.1f", w->measure.bias_z) + ") " + replay_class_name(w->measure.cls);
}

std::string measure_line(const ReplayMeasure& m, bool judged) {
  return "    replay measure over " + std::to_string(m.numel) + " elements: rel L2 " + num(m.rel_l2) +
         ", scale bias " + format_double("%.3g", m.scale_bias) + " (z " + format_double("%.1f", m.bias_z) + "): " +
         replay_class_name(m.cls) + (judged ? "" : " (not judged: an argmax; the decode steps judge its flips)") +
         "\n";
}

}  // namespace

std::string render_compare_text(const CompareResult& r, const VerdictResult& v, const CompareConfig& cfg) {
  std::string o = "kern-run compare: A = " + terminal_safe(r.a_plan) + " on " + r.a_device + "; B = " +
                  terminal_safe(r.b_plan) + " on " + r.b_device + "\n";
  o += "prompt " + std::to_string(cfg.prompt_ids.size()) + " ids (" + std::to_string(r.prefill_tokens) +
       " prefilled in " + std::to_string(r.prefill_chunks) + " chunks), " + std::to_string(r.steps.size()) +
       " decode steps; a region agrees when |a - b| <= " + format_double("%g", cfg.tol.atol) + " + " +
       format_double("%g", cfg.tol.rtol) + " x max|A| (integers: equal)\n";
  o += "replay measure (docs/compare.md): rounding at rel L2 <= " + format_double("%g", kRoundingRelL2) +
       " and |scale bias| <= " + format_double("%g", kRoundingScaleBias) + "; systematic above " +
       format_double("%g", kSystematicRelL2) + " or " + format_double("%g", kSystematicScaleBias) +
       " (a bias counts at |z| >= " + format_double("%g", kBiasZ) + ")\n\n";
  o += "spans (replay: B from A's inputs and state; free: B on its own; ms: total over runs)\n";
  o += pad("program", 9) + pad("span", 6) + pad("dispatches (B)", 44) + pad("regions", 9) +
       pad("replay rel L2, bias (z)", 34) + pad("replay abs", 12) + pad(">2ulp", 8) + pad("free abs", 10) +
       pad("A ms", 10) + "B ms\n";
  for (const SpanResult& s : r.spans) {
    const Worst wr = worst(s, true), wf = worst(s, false);
    const bool ok = s.replay_class() == ReplayClass::kRounding && s.replay_ok() && s.free_ok();
    o += pad(s.program, 9) + pad(std::to_string(s.index), 6) + pad(join(s.b_labels, 42), 44) +
         pad(std::to_string(s.regions.size()), 9) + pad(measure_cell(s), 34) +
         pad(num(wr.max_abs) + (s.replay_ok() ? "" : "!"), 12) + pad(std::to_string(wr.far_ulps), 8) +
         pad(num(wf.max_abs) + (s.free_ok() ? "" : "!"), 10) + pad(format_double("%.3f", s.a_ms), 10) +
         format_double("%.3f", s.b_ms) + (ok ? "" : "  <") + "\n";
  }
  o += "('!': past tolerance)\n";
  if (v.first_bad_span) {
    const SpanResult& s = r.spans[*v.first_bad_span];
    const bool replay = v.first_bad_mode == "span replay";
    const std::string why = v.by_measure ? "first span the replay measure calls " +
                                               std::string(replay_class_name(s.regions[v.first_bad_region].measure.cls))
                                         : "first span past tolerance (" + v.first_bad_mode + ")";
    o += "\n" + why + ": " + s.program + " span " + std::to_string(s.index) + "\n  A dispatches " +
         std::to_string(s.dispatches.a_first) + ".." + std::to_string(s.dispatches.a_end - 1) + ": " +
         join(s.a_labels, 200) + "\n  B dispatches " + std::to_string(s.dispatches.b_first) + ".." +
         std::to_string(s.dispatches.b_end - 1) + ": " + join(s.b_labels, 200) + "\n";
    for (const auto& reg : s.regions) {
      o += region_line(reg, replay ? reg.replay : reg.free, replay ? reg.replay_first_at : reg.free_first_at);
      if (replay) o += measure_line(reg.measure, reg.judged);
    }
    if (!s.only_a.empty()) o += "  written by A only (not compared): " + join(s.only_a, 200) + "\n";
    if (!s.only_b.empty()) o += "  written by B only (not compared): " + join(s.only_b, 200) + "\n";
  }
  o += "\ndecode steps (B free run fed A's ids; KL(A||B) of the " + r.logits_dtype +
       " logits in nats; floor: A against its second run)\n";
  o += pad("step", 6) + pad("pos", 6) + pad("A id", 8) + pad("B id", 8) + pad("KL", 11) + pad("floor KL", 11) +
       "argmax\n";
  for (size_t k = 0; k < r.steps.size(); ++k) {
    const StepResult& s = r.steps[k];
    std::string flip = "same";
    if (s.logits.a_argmax != s.logits.b_argmax)
      flip = std::string(s.logits.near_tie ? "flip, near-tie" : "FLIP, not a near-tie") + " (" +
             std::to_string(s.logits.a_argmax) + " -> " + std::to_string(s.logits.b_argmax) + ": A's gap " +
             format_double("%.4g", s.logits.a_gap) + ", spread " + format_double("%.4g", s.logits.a_spread) + ")";
    o += pad(std::to_string(k), 6) + pad(std::to_string(s.pos), 6) + pad(std::to_string(s.a_id), 8) +
         pad(std::to_string(s.b_id), 8) + pad(num(s.logits.kl), 11) + pad(num(s.floor.kl), 11) + flip + "\n";
  }
  o += "\nverdict: " + std::string(verdict_name(v.verdict)) + ": " + v.reason + "\n";
  return o;
}

}  // namespace kern::run
