// kern-run compare's verdict, text and JSON (compare_report.h).
#include "kern-run/compare_report.h"

#include <algorithm>
#include <cmath>

#include "common/terminal_text.h"
#include "kern-run/number_text.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {

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
  for (size_t i = 0; i < r.spans.size() && !v.first_bad_span; ++i)
    if (!r.spans[i].replay_ok()) v.first_bad_span = i, v.first_bad_mode = "span replay";
  for (size_t i = 0; i < r.spans.size() && !v.first_bad_span; ++i)
    if (!r.spans[i].free_ok()) v.first_bad_span = i, v.first_bad_mode = "free run";
  if (v.floor_max_kl >= kl_threshold / 2 || floor_bad_flips > 0) {
    v.verdict = Verdict::kInconclusive;
    v.reason = "the noise floor (A against its second run) is too high: max KL " +
               format_double("%.3g", v.floor_max_kl) + " (half the threshold: " +
               format_double("%g", kl_threshold / 2) + "), " + std::to_string(floor_bad_flips) +
               " flips outside a near-tie";
    return v;
  }
  if (bad_step) {
    v.verdict = Verdict::kFail;
    v.reason = bad_why;
    if (v.first_bad_span) {
      const SpanResult& s = r.spans[*v.first_bad_span];
      v.reason += "; first span past tolerance (" + v.first_bad_mode + "): " + s.program + " span " +
                  std::to_string(s.index) + " '" + s.b_labels.front() + (s.b_labels.size() > 1 ? "..." : "") + "'";
    } else {
      v.reason += "; no single span is past tolerance (the error builds up over spans)";
    }
    return v;
  }
  v.verdict = Verdict::kPass;
  v.reason = "max KL " + format_double("%.3g", v.max_kl) + " < " + format_double("%g", kl_threshold) + "; " +
             std::to_string(v.flips) + " flips, " + std::to_string(v.near_ties) + " near-ties; floor " +
             format_double("%.3g", v.floor_max_kl);
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

}  // namespace

std::string render_compare_text(const CompareResult& r, const VerdictResult& v, const CompareConfig& cfg) {
  std::string o = "kern-run compare: A = " + terminal_safe(r.a_plan) + " on " + r.a_device + "; B = " +
                  terminal_safe(r.b_plan) + " on " + r.b_device + "\n";
  o += "prompt " + std::to_string(cfg.prompt_ids.size()) + " ids (" + std::to_string(r.prefill_tokens) +
       " prefilled in " + std::to_string(r.prefill_chunks) + " chunks), " + std::to_string(r.steps.size()) +
       " decode steps; a region agrees when |a - b| <= " + format_double("%g", cfg.tol.atol) + " + " +
       format_double("%g", cfg.tol.rtol) + " x max|A| (integers: equal)\n\n";
  o += "spans (replay: B from A's inputs and state; free: B on its own; ms: total over runs)\n";
  o += pad("program", 9) + pad("span", 6) + pad("dispatches (B)", 44) + pad("regions", 9) + pad("replay abs", 12) +
       pad(">2ulp", 8) + pad("free abs", 10) + pad("A ms", 10) + "B ms\n";
  for (const SpanResult& s : r.spans) {
    const Worst wr = worst(s, true), wf = worst(s, false);
    const bool ok = s.replay_ok() && s.free_ok();
    o += pad(s.program, 9) + pad(std::to_string(s.index), 6) + pad(join(s.b_labels, 42), 44) +
         pad(std::to_string(s.regions.size()), 9) + pad(num(wr.max_abs) + (s.replay_ok() ? "" : "!"), 12) +
         pad(std::to_string(wr.far_ulps), 8) + pad(num(wf.max_abs) + (s.free_ok() ? "" : "!"), 10) +
         pad(format_double("%.3f", s.a_ms), 10) + format_double("%.3f", s.b_ms) + (ok ? "" : "  <") + "\n";
  }
  o += "('!': past tolerance)\n";
  if (v.first_bad_span) {
    const SpanResult& s = r.spans[*v.first_bad_span];
    const bool replay = v.first_bad_mode == "span replay";
    o += "\nfirst span past tolerance (" + v.first_bad_mode + "): " + s.program + " span " + std::to_string(s.index) +
         "\n  A dispatches " + std::to_string(s.dispatches.a_first) + ".." + std::to_string(s.dispatches.a_end - 1) +
         ": " + join(s.a_labels, 200) + "\n  B dispatches " + std::to_string(s.dispatches.b_first) + ".." +
         std::to_string(s.dispatches.b_end - 1) + ": " + join(s.b_labels, 200) + "\n";
    for (const auto& reg : s.regions)
      o += region_line(reg, replay ? reg.replay : reg.free, replay ? reg.replay_first_at : reg.free_first_at);
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

namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void str(JsonWriter& w, const std::string& s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }
void number(JsonWriter& w, double v) {
  if (std::isfinite(v)) w.Double(v);
  else w.Null();
}
void key_num(JsonWriter& w, const char* k, double v) {
  w.Key(k);
  number(w, v);
}
void key_str(JsonWriter& w, const char* k, const std::string& v) {
  w.Key(k);
  str(w, v);
}
void strings(JsonWriter& w, const char* k, const std::vector<std::string>& v) {
  w.Key(k);
  w.StartArray();
  for (const auto& s : v) str(w, s);
  w.EndArray();
}

void diff_json(JsonWriter& w, const RegionDiff& d, const std::string& at, bool bf16) {
  w.StartObject();
  w.Key("numel");
  w.Uint64(d.numel);
  w.Key("mismatches");
  w.Uint64(d.mismatches);
  key_num(w, "max_abs", d.max_abs);
  key_num(w, "max_rel", d.max_rel);
  key_num(w, "max_abs_a", d.max_abs_a);
  w.Key("within_tolerance");
  w.Bool(d.within_tolerance);
  if (bf16) {
    w.Key("ulp_histogram");
    w.StartObject();
    for (size_t b = 0; b < kUlpBins; ++b) {
      w.Key(kUlpBinLabels[b]);
      w.Uint64(d.ulp_hist[b]);
    }
    w.EndObject();
  }
  w.Key("first_diff");
  if (d.has_first) {
    w.StartObject();
    w.Key("index");
    w.Uint64(d.first_index);
    key_num(w, "a", d.first_a);
    key_num(w, "b", d.first_b);
    key_str(w, "at", at);
    w.EndObject();
  } else {
    w.Null();
  }
  w.EndObject();
}

void logits_json(JsonWriter& w, const StepLogits& l) {
  w.StartObject();
  key_num(w, "kl", l.kl);
  w.Key("a_argmax");
  w.Int64(l.a_argmax);
  w.Key("b_argmax");
  w.Int64(l.b_argmax);
  w.Key("flip");
  w.Bool(l.a_argmax != l.b_argmax);
  w.Key("near_tie");
  w.Bool(l.near_tie);
  key_num(w, "a_gap", l.a_gap);
  key_num(w, "a_spread", l.a_spread);
  w.EndObject();
}

}  // namespace

std::string render_compare_json(const CompareResult& r, const VerdictResult& v, const CompareConfig& cfg) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  key_str(w, "verdict", verdict_name(v.verdict));
  w.Key("exit_code");
  w.Int(verdict_exit_code(v.verdict));
  key_str(w, "reason", v.reason);
  key_num(w, "max_kl", v.max_kl);
  key_num(w, "floor_max_kl", v.floor_max_kl);
  key_num(w, "kl_threshold", cfg.kl_threshold);
  w.Key("flips");
  w.Uint64(v.flips);
  w.Key("near_ties");
  w.Uint64(v.near_ties);
  w.Key("first_bad_span");
  if (v.first_bad_span) {
    const SpanResult& s = r.spans[*v.first_bad_span];
    w.StartObject();
    key_str(w, "program", s.program);
    w.Key("span");
    w.Uint(s.index);
    key_str(w, "mode", v.first_bad_mode);
    strings(w, "a_labels", s.a_labels);
    strings(w, "b_labels", s.b_labels);
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("a");
  w.StartObject();
  key_str(w, "plan", r.a_plan);
  key_str(w, "device", r.a_device);
  w.EndObject();
  w.Key("b");
  w.StartObject();
  key_str(w, "plan", r.b_plan);
  key_str(w, "device", r.b_device);
  w.EndObject();
  w.Key("prompt_ids");
  w.StartArray();
  for (int64_t id : cfg.prompt_ids) w.Int64(id);
  w.EndArray();
  w.Key("prefill_chunks");
  w.Uint64(r.prefill_chunks);
  w.Key("tolerance");
  w.StartObject();
  key_num(w, "rtol", cfg.tol.rtol);
  key_num(w, "atol", cfg.tol.atol);
  w.EndObject();
  w.Key("spans");
  w.StartArray();
  for (const SpanResult& s : r.spans) {
    w.StartObject();
    key_str(w, "program", s.program);
    w.Key("span");
    w.Uint(s.index);
    w.Key("a_dispatches");
    w.StartArray();
    w.Uint(s.dispatches.a_first);
    w.Uint(s.dispatches.a_end);
    w.EndArray();
    w.Key("b_dispatches");
    w.StartArray();
    w.Uint(s.dispatches.b_first);
    w.Uint(s.dispatches.b_end);
    w.EndArray();
    strings(w, "a_labels", s.a_labels);
    strings(w, "b_labels", s.b_labels);
    w.Key("runs");
    w.Uint64(s.runs);
    key_num(w, "a_ms", s.a_ms);
    key_num(w, "b_ms", s.b_ms);
    w.Key("replay_ok");
    w.Bool(s.replay_ok());
    w.Key("free_ok");
    w.Bool(s.free_ok());
    w.Key("regions");
    w.StartArray();
    for (const RegionResult& reg : s.regions) {
      w.StartObject();
      key_str(w, "name", reg.name);
      key_str(w, "dtype", reg.dtype);
      w.Key("replay");
      diff_json(w, reg.replay, reg.replay_first_at, reg.dtype == "bf16");
      w.Key("free");
      diff_json(w, reg.free, reg.free_first_at, reg.dtype == "bf16");
      w.EndObject();
    }
    w.EndArray();
    strings(w, "only_a", s.only_a);
    strings(w, "only_b", s.only_b);
    w.EndObject();
  }
  w.EndArray();
  w.Key("steps");
  w.StartArray();
  for (const StepResult& s : r.steps) {
    w.StartObject();
    w.Key("pos");
    w.Uint64(s.pos);
    w.Key("input_id");
    w.Int64(s.input_id);
    w.Key("a_id");
    w.Int64(s.a_id);
    w.Key("b_id");
    w.Int64(s.b_id);
    w.Key("logits");
    logits_json(w, s.logits);
    w.Key("floor");
    logits_json(w, s.floor);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

}  // namespace kern::run
