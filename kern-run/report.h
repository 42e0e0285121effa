// kern-run's report of one generation: as text (the ids run prints it on
// stdout; the text run prints the statistics part on stderr, the text
// itself having streamed to stdout) or as exactly one JSON object (--json).
#pragma once

#include <string>
#include <vector>

#include "kern-engine/decode_stats.h"
#include "kern-engine/generate.h"
#include "kern-engine/model.h"
#include "kern-run/rank_figures.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {

/// What is reported besides the generation result. Pointers are borrowed.
struct ReportContext {
  const std::vector<int64_t>* prompt_ids = nullptr;
  std::string device;
  uint64_t capacity = 0;
  const engine::LoadPhases* load = nullptr;  ///< may be null: no load line / object
  const std::string* text = nullptr;  ///< generated text; null without a tokenizer
  double tokenize_ms = 0;             ///< prompt encode time (text prompts)
  /// The loaded plan's memory (bytes by class, arena); may be null: no memory line / object.
  const load::MemoryPlan* memory = nullptr;
  uint64_t peak_rss_bytes = 0;  ///< the process's peak resident memory (getrusage), 0 = unknown
  /// How ids were picked (the `sampling` object of --json); may be null: no object.
  const engine::SamplingParams* sampling = nullptr;
  bool random_weights = false;  ///< engine::Model::random_weights (explains a near-zero acceptance)
  /// Every rank's figures at --tp N > 1 (rank_figures.h), by rank; may be
  /// null: one device, no per-rank lines / `ranks` array.
  const std::vector<RankFigures>* ranks = nullptr;
};

/// Writes the decode loop's per-step keys shared by kern-run --json and
/// kern-run bench --json (docs/running.md): `decode_steady_steps`, then
/// `decode_launches_per_step`, `decode_host_writes_per_step`,
/// `decode_host_waits_per_step` (null without steady steps) and the GPU
/// timings `decode_gpu_busy_ms_per_step`, `decode_gpu_wall_ms_per_step`,
/// `decode_host_gap_us_per_step`, `decode_host_gap_us_max` (null untimed).
void write_decode_step_json(rapidjson::Writer<rapidjson::StringBuffer>& w, const engine::DecodeStats& st);

/// The process's peak resident memory in bytes (getrusage ru_maxrss, KiB on
/// Linux); 0 when unavailable.
uint64_t peak_rss_bytes();

/// Statistics lines: load phases, memory by class (then one line a rank
/// with --tp N > 1), prompt/generated counts
/// and why generation ended, time to first token, prefill tok/s, decode
/// ms/token and tok/s.
std::string render_stats(const engine::SequenceResult& r, const ReportContext& ctx);

/// "generated ids: a, b, c" then render_stats (the ids run's stdout).
std::string render_text(const engine::SequenceResult& r, const ReportContext& ctx);

/// One JSON object (no trailing newline) with `generated_ids`, `prompt_ids`,
/// `text` (when a tokenizer was given), `stop_reason` ("end_token" or
/// "steps"), `time_to_first_token_ms`, `prefill_ms` (= time to first token),
/// `prefill_tokens_per_s`, `decode_ms_per_token`, `decode_tokens_per_s`,
/// `decode_steps`, the decode loop's figures (`decode_mode` "async"/"sync",
/// `decode_lookahead`, `decode_surplus_steps`, `decode_steady_steps`, per
/// steady-state step `decode_launches_per_step`, `decode_host_writes_per_step`,
/// `decode_host_waits_per_step` — null without steady-state steps — and
/// `decode_gpu_busy_ms_per_step`, `decode_gpu_wall_ms_per_step`,
/// `decode_host_gap_us_per_step`, `decode_host_gap_us_max` — null without
/// device timers), `chunk`, `capacity`, `device`, `tokenize_ms`, and `load_ms`
/// {plan, device, weights_open, kernels, allocate, weights_upload, stage,
/// total} plus `weight_bytes` and `weight_bytes_in_place`, and `memory`
/// {weights, weights_in_place, states, workspace, scratch, arena,
/// arena_unplanned, arena_peak_live, arena_planned, io, total,
/// peak_rss} in bytes (docs/memory-plan.md), and at --tp N > 1 `ranks`
/// (rank_figures.h write_ranks_json: every rank's memory and collectives);
/// with --spec, the `spec` object
/// of spec_report.h (after the decode figures). `decode_steps_timed` is the
/// steps the decode figures cover (engine::SequenceResult); with none,
/// `decode_ms_per_token` and `decode_tokens_per_s` are null.
std::string render_json(const engine::SequenceResult& r, const ReportContext& ctx);

}  // namespace kern::run
