// kern-run's report of one generation, as text or JSON (report.h).
#include "kern-run/report.h"

#include <sys/resource.h>

#include <charconv>
#include <cstdlib>
#include <string>
#include <utility>

#include "common/version.h"
#include "kern-run/number_text.h"
#include "kern-run/spec_report.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {
namespace {

struct Speeds {
  double prefill_tok_s = 0, decode_ms_per_token = 0, decode_tok_s = 0;
  bool decode_timed = false;  ///< false: no decode step was timed (the decode figures are absent)
};

/// Decode figures are over the steps actually timed (SequenceResult::
/// decode_steps_timed), never over ids whose steps ran before the window.
Speeds speeds(const engine::SequenceResult& r, size_t prompt_tokens) {
  Speeds s;
  if (r.prefill_ms > 0) s.prefill_tok_s = static_cast<double>(prompt_tokens) * 1000.0 / r.prefill_ms;
  if (r.decode_steps_timed > 0 && r.decode_ms > 0) {
    s.decode_timed = true;
    s.decode_ms_per_token = r.decode_ms / static_cast<double>(r.decode_steps_timed);
    s.decode_tok_s = static_cast<double>(r.decode_steps_timed) * 1000.0 / r.decode_ms;
  }
  return s;
}

/// The "decode: ..." line of render_stats.
std::string decode_line(const engine::SequenceResult& r, const Speeds& s) {
  std::string out = "decode: " + std::to_string(r.decode_steps) + (r.decode_steps == 1 ? " step" : " steps");
  if (r.decode_steps == 0) return out + "\n";
  if (!s.decode_timed)
    return out + ", too few timed for per-token figures (the asynchronous loop issues the second step with the "
                 "first; more --steps, or --sync)\n";
  if (r.decode_steps_timed != r.decode_steps) out += " (" + std::to_string(r.decode_steps_timed) + " timed)";
  return out + ", " + format_double("%.3f", s.decode_ms_per_token) + " ms/token (" +
         format_double("%.1f", s.decode_tok_s) + " tok/s)\n";
}

/// The weights phase of render_stats' load line: what was copied and what
/// the device reads in place (the cpu device copies nothing), so that an
/// in-place load does not read as "0.0 MB uploaded".
std::string weights_phase(const engine::LoadPhases& l) {
  const load::LoadTimings& e = l.executable;
  auto mb = [](uint64_t b) { return format_double("%.1f", static_cast<double>(b) / 1e6); };
  const std::string ms = format_double("%.1f", l.weights_open_ms + e.weights_ms);
  if (e.weight_bytes_in_place == 0) return "weights upload " + ms + " ms for " + mb(e.weight_bytes) + " MB";
  if (e.weight_bytes == 0) return "weights " + ms + " ms (" + mb(e.weight_bytes_in_place) + " MB read in place, not copied)";
  return "weights upload " + ms + " ms for " + mb(e.weight_bytes) + " MB (+ " + mb(e.weight_bytes_in_place) +
         " MB read in place)";
}

/// The decode loop's steady-state line of render_stats.
std::string decode_stats_line(const engine::SequenceResult& r) {
  const engine::DecodeStats& st = r.stats;
  if (r.spec && st.steady_steps == 0)  // rounds only: their figures are the speculative line's
    return "decode loop: speculative rounds (each reads its ids back; figures by round below)\n";
  std::string out = std::string("decode loop: ") + (r.sync ? "synchronous" : "asynchronous");
  if (!r.sync) out += " (lookahead " + std::to_string(engine::kDecodeLookahead) + ")";
  if (st.steady_steps == 0) return out + "; too few steps for steady-state figures\n";
  out += "; steady state over " + std::to_string(st.steady_steps) +
         " steps, per step: " + format_double("%.2f", st.launches_per_step) + " launches, " +
         format_double("%.2f", st.host_writes_per_step) + " host writes, " +
         format_double("%.2f", st.host_waits_per_step) + " host waits";
  if (st.gpu_timed)
    out += "; GPU busy " + format_double("%.4f", st.gpu_busy_ms_per_step) + " ms, wall " +
           format_double("%.4f", st.gpu_wall_ms_per_step) + " ms, host gap " +
           format_double("%.1f", st.host_gap_us_per_step) + " us (max " + format_double("%.1f", st.host_gap_us_max) +
           ")";
  return out + "\n";
}

/// The decode loop's figures in render_json (docs/running.md): all keys in one place.
void write_decode_stats(rapidjson::Writer<rapidjson::StringBuffer>& w, const engine::SequenceResult& r) {
  w.Key("decode_mode");
  w.String(r.sync ? "sync" : "async");
  w.Key("decode_lookahead");
  w.Uint64(r.sync ? 0 : engine::kDecodeLookahead);
  w.Key("decode_surplus_steps");
  w.Uint64(r.surplus_steps);
  write_decode_step_json(w, r.stats);
}

}  // namespace

void write_decode_step_json(rapidjson::Writer<rapidjson::StringBuffer>& w, const engine::DecodeStats& st) {
  auto num_or_null = [&w](const char* key, bool present, double v) {
    w.Key(key);
    if (present) w.Double(v);
    else w.Null();
  };
  w.Key("decode_steady_steps");
  w.Uint64(st.steady_steps);
  const bool steady = st.steady_steps > 0;
  num_or_null("decode_launches_per_step", steady, st.launches_per_step);
  num_or_null("decode_host_writes_per_step", steady, st.host_writes_per_step);
  num_or_null("decode_host_waits_per_step", steady, st.host_waits_per_step);
  num_or_null("decode_gpu_busy_ms_per_step", st.gpu_timed, st.gpu_busy_ms_per_step);
  num_or_null("decode_gpu_wall_ms_per_step", st.gpu_timed, st.gpu_wall_ms_per_step);
  num_or_null("decode_host_gap_us_per_step", st.gpu_timed, st.host_gap_us_per_step);
  num_or_null("decode_host_gap_us_max", st.gpu_timed, st.host_gap_us_max);
}

uint64_t peak_rss_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0 || u.ru_maxrss < 0) return 0;
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

std::string render_stats(const engine::SequenceResult& r, const ReportContext& ctx) {
  Speeds s = speeds(r, ctx.prompt_ids->size());
  std::string out;
  if (ctx.load != nullptr) {
    const engine::LoadPhases& l = *ctx.load;
    const load::LoadTimings& e = l.executable;
    out += "load: " + format_double("%.1f", l.total_ms) + " ms (plan " + format_double("%.1f", l.plan_ms) +
           ", device " + format_double("%.1f", l.device_ms) + ", kernels " + format_double("%.1f", e.kernels_ms) +
           ", allocate " + format_double("%.1f", e.allocate_ms) + ", " + weights_phase(l) + ", stage " +
           format_double("%.1f", e.stage_ms) +
           (e.weight_bytes_packed > 0 ? ", decode GEMV weights packed " + format_double("%.1f", e.pack_ms) + " ms" : "") +
           ")\n";
  }
  if (ctx.memory != nullptr) {
    const PlanMemoryBytes& m = ctx.memory->bytes;
    auto mb = [](uint64_t b) { return format_double("%.1f", static_cast<double>(b) / 1e6); };
    out += "memory: weights " + mb(m.weights) + " MB, states " + mb(m.states.value_or(0)) + " MB at capacity " +
           std::to_string(ctx.capacity) + ", workspace arena " + mb(m.arena) + " MB (" + mb(m.arena_unplanned) +
           " MB before planning, " + mb(m.arena_peak_live) + " MB peak live), io " + mb(m.io) + " MB";
    if (ctx.load != nullptr && ctx.load->executable.weight_bytes_packed > 0)
      out += ", packed decode GEMV weights " + mb(ctx.load->executable.weight_bytes_packed) + " MB";
    if (ctx.peak_rss_bytes > 0) out += "; peak resident " + mb(ctx.peak_rss_bytes) + " MB";
    out += "\n";
  }
  if (ctx.ranks != nullptr) out += render_rank_lines(*ctx.ranks);
  out += "prefill: " + std::to_string(ctx.prompt_ids->size()) + " tokens in " + format_double("%.3f", r.prefill_ms) +
         " ms (" + format_double("%.1f", s.prefill_tok_s) + " tok/s, chunk " + std::to_string(r.chunk) +
         "); time to first token " + format_double("%.3f", r.prefill_ms) + " ms\n";
  out += decode_line(r, s);
  out += decode_stats_line(r);
  if (r.spec) {
    out += spec_stats_line(*r.spec);
    if (std::string note = spec_acceptance_note(*r.spec, ctx.random_weights); !note.empty()) out += note + "\n";
  }
  out += "generated " + std::to_string(r.generated_ids.size()) + " tokens, stopped by " +
         (r.stopped ? "an end token" : "--steps") + "\n";
  out += "device: " + ctx.device + "\n";
  return out;
}

std::string render_text(const engine::SequenceResult& r, const ReportContext& ctx) {
  std::string out = "generated ids:";
  for (size_t i = 0; i < r.generated_ids.size(); ++i) out += (i ? ", " : " ") + std::to_string(r.generated_ids[i]);
  return out + "\n" + render_stats(r, ctx);
}

namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void write_number(JsonWriter& w, const char* key, double v) {
  w.Key(key);
  w.Double(v);
}

void write_u64(JsonWriter& w, const char* key, uint64_t v) {
  w.Key(key);
  w.Uint64(v);
}

/// "load_ms" (by phase), "weight_bytes", "weight_bytes_in_place" and
/// "weight_bytes_packed".
void write_load(JsonWriter& w, const engine::LoadPhases& l) {
  w.Key("load_ms");
  w.StartObject();
  write_number(w, "plan", l.plan_ms);
  write_number(w, "device", l.device_ms);
  write_number(w, "weights_open", l.weights_open_ms);
  write_number(w, "kernels", l.executable.kernels_ms);
  write_number(w, "allocate", l.executable.allocate_ms);
  write_number(w, "weights_upload", l.executable.weights_ms);
  write_number(w, "stage", l.executable.stage_ms);
  write_number(w, "pack", l.executable.pack_ms);
  write_number(w, "total", l.total_ms);
  w.EndObject();
  write_u64(w, "weight_bytes", l.executable.weight_bytes);
  write_u64(w, "weight_bytes_in_place", l.executable.weight_bytes_in_place);
  write_u64(w, "weight_bytes_packed", l.executable.weight_bytes_packed);
}

/// "memory": bytes by class (docs/memory-plan.md) and the peak RSS.
void write_memory(JsonWriter& w, const ReportContext& ctx) {
  const PlanMemoryBytes& m = ctx.memory->bytes;
  w.Key("memory");
  w.StartObject();
  write_u64(w, "weights", m.weights);
  write_u64(w, "weights_in_place", ctx.load != nullptr ? ctx.load->executable.weight_bytes_in_place : 0);
  write_u64(w, "weights_packed", ctx.load != nullptr ? ctx.load->executable.weight_bytes_packed : 0);
  write_u64(w, "states", m.states.value_or(0));
  write_u64(w, "workspace", m.workspace);
  write_u64(w, "scratch", m.scratch);
  write_u64(w, "arena", m.arena);
  write_u64(w, "arena_unplanned", m.arena_unplanned);
  write_u64(w, "arena_peak_live", m.arena_peak_live);
  w.Key("arena_planned");
  w.Bool(m.arena_planned);
  write_u64(w, "io", m.io);
  write_u64(w, "total", m.total.value_or(0));
  write_u64(w, "peak_rss", ctx.peak_rss_bytes);
  w.EndObject();
}

}  // namespace

std::string render_json(const engine::SequenceResult& r, const ReportContext& ctx) {
  Speeds s = speeds(r, ctx.prompt_ids->size());
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("generated_ids");
  w.StartArray();
  for (int64_t id : r.generated_ids) w.Int64(id);
  w.EndArray();
  w.Key("prompt_ids");
  w.StartArray();
  for (int64_t id : *ctx.prompt_ids) w.Int64(id);
  w.EndArray();
  // Prompt tokens mapped from the prefix cache (0 for a single prompt: the
  // cache lives in one process; docs/serving.md "Prefix caching").
  write_u64(w, "cached_tokens", r.cached_tokens);
  if (ctx.text != nullptr) {
    w.Key("text");
    w.String(ctx.text->data(), static_cast<rapidjson::SizeType>(ctx.text->size()));
  }
  w.Key("stop_reason");
  w.String(r.stopped ? "end_token" : "steps");
  write_number(w, "time_to_first_token_ms", r.prefill_ms);
  write_number(w, "prefill_ms", r.prefill_ms);
  write_number(w, "prefill_tokens_per_s", s.prefill_tok_s);
  const std::pair<const char*, double> decode_figures[] = {{"decode_ms_per_token", s.decode_ms_per_token},
                                                           {"decode_tokens_per_s", s.decode_tok_s}};
  for (const auto& [key, v] : decode_figures) {
    w.Key(key);
    if (s.decode_timed) w.Double(v);
    else w.Null();  // no step timed: no figure (0 would read as a measurement)
  }
  write_u64(w, "decode_steps", r.decode_steps);
  write_u64(w, "decode_steps_timed", r.decode_steps_timed);
  write_decode_stats(w, r);
  if (r.spec) write_spec_json(w, *r.spec, ctx.random_weights);
  if (ctx.sampling != nullptr) {  // docs/running.md "Sampling"
    const engine::SamplingParams& p = *ctx.sampling;
    // An f32 parameter as the user wrote it (0.8, not 0.800000011920929): its shortest decimal form.
    auto f32 = [&w](const char* key, float v) {
      char text[32];
      const auto end = std::to_chars(text, text + sizeof text, v).ptr;
      w.Key(key);
      w.Double(std::strtod(std::string(text, end).c_str(), nullptr));
    };
    w.Key("sampling");
    w.StartObject();
    f32("temperature", p.temperature);
    w.Key("top_k");
    w.Uint(p.top_k);
    f32("top_p", p.top_p);
    f32("min_p", p.min_p);
    w.Key("seed");  // the seed used (the caller's or kern-run's); null when greedy
    if (p.greedy()) w.Null();
    else w.Uint64(p.seed);
    w.EndObject();
  }
  write_u64(w, "chunk", r.chunk);
  write_u64(w, "capacity", ctx.capacity);
  w.Key("device");
  w.String(ctx.device.c_str(), static_cast<rapidjson::SizeType>(ctx.device.size()));
  write_number(w, "tokenize_ms", ctx.tokenize_ms);
  if (ctx.load != nullptr) write_load(w, *ctx.load);
  if (ctx.memory != nullptr) write_memory(w, ctx);
  if (ctx.ranks != nullptr) write_ranks_json(w, *ctx.ranks);
  w.Key("kern");  // the build that produced these figures (common/version.h)
  const std::string version = version_json();
  w.RawValue(version.data(), version.size(), rapidjson::kObjectType);
  w.EndObject();
  return sb.GetString();
}

}  // namespace kern::run
