// kern-run --requests (run_requests.h).
#include "kern-run/run_requests.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "kern-engine/clock.h"
#include "kern-engine/engine.h"
#include "kern-engine/request.h"
#include "kern-run/chat_template.h"
#include "kern-run/cli_errors.h"
#include "kern-run/end_tokens.h"
#include "kern-run/generation_config.h"
#include "kern-run/load_model.h"
#include "kern-run/progress.h"
#include "kern-run/prompt_input.h"
#include "kern-run/rank_figures.h"
#include "kern-run/requests_file.h"
#include "kern-run/sampling_options.h"
#include "kern-run/stream_output.h"
#include "kern-run/tokenizer/tokenizer.h"
#include "kern-run/weights_hint.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {

namespace {

/// A request of the file and what it produced.
struct Job {
  RequestLine line;
  engine::Request req;
  std::vector<int64_t> ids;
  uint64_t cached_tokens = 0;  ///< prompt tokens mapped from the prefix cache
  std::string text;
  std::optional<engine::FinishReason> finished;
  std::string error;
  engine::Clock::time_point t_first, t_last;
  bool printed = false;
};

const char* reason_name(engine::FinishReason r) {
  switch (r) {
    case engine::FinishReason::kStop: return "stop";
    case engine::FinishReason::kLength: return "length";
    case engine::FinishReason::kAborted: return "abort";
    case engine::FinishReason::kError: return "error";
  }
  return "error";
}

std::string render_result(const Job& j, size_t index, engine::Clock::time_point t0, bool with_text) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("index");
  w.Uint64(index);
  w.Key("line");
  w.Uint(j.line.line);
  w.Key("prompt_tokens");
  w.Uint64(j.req.prompt_ids.size());
  w.Key("cached_tokens");
  w.Uint64(j.cached_tokens);
  w.Key("ids");
  w.StartArray();
  for (int64_t id : j.ids) w.Int64(id);
  w.EndArray();
  if (with_text) {
    w.Key("text");
    w.String(j.text.data(), static_cast<rapidjson::SizeType>(j.text.size()));
  }
  w.Key("finish_reason");
  w.String(reason_name(j.finished.value_or(engine::FinishReason::kError)));
  if (!j.error.empty()) {
    w.Key("error");
    w.String(j.error.c_str());
  }
  if (!j.req.sampling.greedy()) {  // the seed it sampled with: the line's, or the one drawn for it
    w.Key("seed");
    w.Uint64(j.req.sampling.seed);
  }
  // Timings from the start of the run (every request is submitted then):
  // time to the first id, and the decode rate over the remaining ids.
  w.Key("timings");
  w.StartObject();
  if (!j.ids.empty()) {
    const double decode_ms = engine::ms_between(j.t_first, j.t_last);
    w.Key("first_token_ms");
    w.Double(engine::ms_between(t0, j.t_first));
    w.Key("decode_ms");
    w.Double(decode_ms);
    w.Key("decode_tok_s");
    w.Double(j.ids.size() > 1 && decode_ms > 0 ? static_cast<double>(j.ids.size() - 1) * 1000.0 / decode_ms : 0.0);
  }
  w.EndObject();
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize()) + "\n";
}

/// Turns the file's lines into checked engine requests. Errors (kUsage): each as "FILE:LINE: ...".
Result<std::vector<Job>> build_jobs(const RunOptions& o, const std::vector<RequestLine>& lines,
                                    const engine::CausalLmContract& c, uint64_t capacity, const tok::Tokenizer* tok) {
  const std::string file = o.requests_path == "-" ? "<stdin>" : o.requests_path;
  std::vector<Job> jobs;
  std::string errors;
  for (size_t i = 0; i < lines.size(); ++i) {
    const RequestLine& l = lines[i];
    const std::string at = file + ":" + std::to_string(l.line);
    auto bad = [&](const std::string& m) { errors += (errors.empty() ? "" : "\n") + at + ": " + m; };
    Job j;
    j.line = l;
    engine::Request& r = j.req;
    r.id = i;
    r.chunk = o.chunk;
    r.max_tokens = l.max_tokens.value_or(o.steps);
    r.sampling = l.sampling;
    // A sampled line without a seed gets a fresh one, reported in its result ("seed").
    if (!r.sampling.greedy() && !l.has_seed) r.sampling.seed = random_seed();
    if (l.prompt) {
      if (tok == nullptr) {
        bad("'prompt' needs --tokenizer tokenizer.json (or give 'prompt_ids')");
        continue;
      }
      auto ids = tok->encode(*l.prompt);
      if (!ids.ok()) {
        bad("'prompt': " + ids.error().message);
        continue;
      }
      r.prompt_ids.assign(ids.value().begin(), ids.value().end());
      if (r.prompt_ids.empty()) {
        bad("'prompt' encodes to no token");
        continue;
      }
    } else {
      r.prompt_ids = l.prompt_ids;
    }
    if (!l.stop.empty() && tok == nullptr) {
      bad("'stop' strings need --tokenizer tokenizer.json (or give 'stop_ids')");
      continue;
    }
    if (Status s = engine::check_token_ids(l.stop_ids, c.vocab, "stop"); !s.ok()) {
      bad("'stop_ids': " + s.error().message);
      continue;
    }
    r.stop_ids = l.stop_ids;
    if (!l.ignore_eos && !o.ignore_eos)
      for (int64_t id : end_ids(tok, o.load.end_ids))
        if (id >= 0 && static_cast<uint64_t>(id) < c.vocab) r.stop_ids.push_back(id);
    if (Status s = engine::check_request(c, capacity, r); !s.ok()) {
      bad(s.error().message);
      continue;
    }
    jobs.push_back(std::move(j));
  }
  if (!errors.empty()) return make_error(ErrorKind::kUsage, errors);
  return jobs;
}

/// Text of `ids` and whether it reached one of `stops`: then `text` ends
/// just before the first stop string (as OpenAI's `stop`).
bool apply_stop_strings(const tok::Tokenizer& tok, const std::vector<int64_t>& ids,
                        const std::vector<std::string>& stops, std::string& text) {
  std::vector<int32_t> ids32(ids.begin(), ids.end());
  text = tok.decode(ids32);
  size_t cut = std::string::npos;
  for (const std::string& s : stops) cut = std::min(cut, text.find(s));
  if (cut == std::string::npos) return false;
  text.resize(cut);
  return true;
}

Status run(const RunOptions& o, bool& any_failed) {
  KERN_ASSIGN_OR_RETURN(auto opened, open_plan_for(o.plan_path, false));
  const engine::CausalLmContract c = opened.contract;
  std::optional<tok::Tokenizer> tokenizer;
  if (!o.tokenizer_path.empty()) {
    KERN_ASSIGN_OR_RETURN(auto t, tok::Tokenizer::load(o.tokenizer_path), "--tokenizer");
    tokenizer = std::move(t);
  }
  const tok::Tokenizer* tok = tokenizer ? &*tokenizer : nullptr;
  const uint64_t capacity = o.capacity.value_or(engine::default_capacity(c));
  KERN_RETURN_IF_ERROR(engine::check_capacity(c, capacity), "--capacity");
  KERN_RETURN_IF_ERROR(engine::check_token_ids(o.load.end_ids, c.vocab, "end"), kGenerationEndIdsContext);
  const uint64_t plan_batch = opened.batch ? opened.batch->max_batch : 1;
  const uint64_t max_batch = o.max_batch.value_or(plan_batch);
  if (max_batch > plan_batch)
    return make_error(ErrorKind::kUsage,
                      "--max-batch " + std::to_string(max_batch) + " exceeds the plan's max_batch " +
                          std::to_string(plan_batch) +
                          (opened.batch ? "" : " (it has no decode_batch program: regenerate the manifest with "
                                               "examples/gen_qwen3_manifest.py --max-batch N)"));
  KERN_ASSIGN_OR_RETURN(auto lines, read_requests_file(o.requests_path, capacity));
  KERN_ASSIGN_OR_RETURN(auto jobs, build_jobs(o, lines, c, capacity, tok));

  ProgressLine progress(stderr, prints_report(o.load) && isatty(STDERR_FILENO) != 0);
  auto loaded = load_model(std::move(opened), o.load, capacity, &progress);
  progress.clear();
  if (!loaded.ok()) return with_weights_next_step(loaded.error(), o.plan_path, o.load.weights_path);
  auto model = std::move(loaded.value());
  engine::Engine engine(*model);
  // The prefix cache needs the batched program (its pages go through block tables).
  const bool prefix_cache = o.prefix_cache && model->batch() != nullptr;
  KERN_RETURN_IF_ERROR(engine.set_max_batch(max_batch, prefix_cache), "--max-batch");
  // The memory report's line for the KV pool (docs/batching.md).
  const uint64_t pool_pages = model->capacity() / engine::kKvBlockTokens;
  const auto& mem = model->executable().memory().bytes;
  const char* cache_note = prefix_cache ? "on" : o.prefix_cache ? "off (the plan has no decode_batch)" : "off";
  if (prints_report(o.load))
    std::fprintf(stderr,
                 "kv pool: %llu pages of %llu tokens (capacity %llu tokens, states %.1f MB) for up to %llu "
                 "sequences at once, prefix cache %s; %zu requests\n",
                 static_cast<unsigned long long>(pool_pages), static_cast<unsigned long long>(engine::kKvBlockTokens),
                 static_cast<unsigned long long>(model->capacity()),
                 static_cast<double>(mem.states.value_or(0)) / 1e6, static_cast<unsigned long long>(max_batch),
                 cache_note, jobs.size());
  for (Job& j : jobs) KERN_RETURN_IF_ERROR(engine.add_request(j.req), "request at line " + std::to_string(j.line.line));

  const auto t0 = engine::Clock::now();
  size_t next_print = 0;
  // Bounded: every step makes progress (a prefill chunk or a decode step).
  while (!engine.idle()) {
    KERN_ASSIGN_OR_RETURN(auto events, engine.step());
    const auto now = engine::Clock::now();
    for (const engine::TokenEvent& ev : events) {
      Job& j = jobs[ev.id];
      if (j.finished) continue;  // ended by a stop string: its abort event
      j.cached_tokens = ev.cached_tokens;
      if (!ev.ids.empty()) {
        if (j.ids.empty()) j.t_first = now;
        j.t_last = now;
        j.ids.insert(j.ids.end(), ev.ids.begin(), ev.ids.end());
      }
      if (tok != nullptr && !j.ids.empty() && apply_stop_strings(*tok, j.ids, j.line.stop, j.text)) {
        j.finished = engine::FinishReason::kStop;  // the text ends before the stop string
        if (!ev.finished) engine.abort(ev.id);
        continue;
      }
      if (ev.finished) {
        j.finished = *ev.finished;
        if (ev.error) j.error = ev.error->message;
      }
    }
    while (next_print < jobs.size() && jobs[next_print].finished) {
      Job& j = jobs[next_print];
      if (*j.finished == engine::FinishReason::kError) any_failed = true;
      write_stdout(render_result(j, next_print, t0, tok != nullptr));
      j.printed = true;
      ++next_print;
    }
    KERN_RETURN_IF_ERROR(flush_stdout());
  }
  // At --tp N every rank reaches this point: rank 0 reports each rank's
  // memory and collectives (rank_figures.h).
  if (cpu::Collective* tp = model->executable().device().collective(); tp != nullptr && tp->world() > 1) {
    KERN_ASSIGN_OR_RETURN(auto ranks, gather_rank_figures(*tp, rank_figures_of(*model, tp->rank())),
                          "the memory report");
    if (prints_report(o.load)) std::fputs(render_rank_lines(ranks).c_str(), stderr);
  }
  return {};
}

}  // namespace

int run_requests_command(const RunOptions& o) {
  bool any_failed = false;
  Status s = run(o, any_failed);
  if (!s.ok()) return fail(s.error());
  return any_failed ? 1 : 0;
}

}  // namespace kern::run
