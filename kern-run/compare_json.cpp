// kern-run compare's --json object (compare_report.h).
#include <cmath>

#include "kern-run/compare_report.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {

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

void measure_json(JsonWriter& w, const ReplayMeasure& m) {
  w.StartObject();
  w.Key("numel");
  w.Uint64(m.numel);
  key_num(w, "rel_l2", m.rel_l2);
  key_num(w, "scale_bias", m.scale_bias);
  key_num(w, "bias_z", m.bias_z);
  key_str(w, "class", replay_class_name(m.cls));
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
  key_num(w, "rms_diff", l.rms_diff);
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
    key_str(w, "by", v.by_measure ? "replay measure" : "tolerance");
    strings(w, "a_labels", s.a_labels);
    strings(w, "b_labels", s.b_labels);
    if (v.by_measure) {
      key_str(w, "region", s.regions[v.first_bad_region].name);
      w.Key("measure");
      measure_json(w, s.regions[v.first_bad_region].measure);
    }
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
  w.Key("replay_measure");
  w.StartObject();
  key_num(w, "rounding_rel_l2", kRoundingRelL2);
  key_num(w, "systematic_rel_l2", kSystematicRelL2);
  key_num(w, "bias_z", kBiasZ);
  key_num(w, "rounding_scale_bias", kRoundingScaleBias);
  key_num(w, "systematic_scale_bias", kSystematicScaleBias);
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
    key_str(w, "replay_class", replay_class_name(s.replay_class()));
    w.Key("regions");
    w.StartArray();
    for (const RegionResult& reg : s.regions) {
      w.StartObject();
      key_str(w, "name", reg.name);
      key_str(w, "dtype", reg.dtype);
      w.Key("judged");
      w.Bool(reg.judged);
      w.Key("measure");
      measure_json(w, reg.measure);
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
