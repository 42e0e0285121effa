// The kern-run command: load, generate, dump, report (run_command.h).
#include "kern-run/run_command.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include "common/file_util.h"
#include "kern-engine/engine.h"
#include "kern-engine/generate.h"
#include "kern-engine/request.h"
#include "kern-load/executable.h"
#include "kern-run/capacity_hint.h"
#include "kern-run/dump_paths.h"
#include "kern-run/generation_config.h"
#include "kern-run/load_model.h"
#include "kern-run/progress.h"
#include "kern-run/prompt_input.h"
#include "kern-run/report.h"
#include "kern-run/sampling_options.h"
#include "kern-run/stream_output.h"
#include "kern-run/tokenizer/tokenizer.h"
#include "kern-run/weights_hint.h"
#include "spdlog/spdlog.h"

namespace kern::run {

namespace {

/// A dump resolved to its buffer index before anything runs.
struct ResolvedDump {
  uint32_t buffer;
  std::string name;
  std::string path;
};

Status write_dumps(load::Executable& exe, const std::vector<ResolvedDump>& dumps) {
  for (const auto& d : dumps) {
    // The buffer's size at its last use: the last program's symbol values.
    KERN_ASSIGN_OR_RETURN(auto size, exe.buffer_size_bytes(d.buffer, exe.last_symbol_values()),
                          "--dump-buffer " + d.name);
    std::string bytes(size, '\0');
    Status s = exe.read_buffer(d.buffer, std::span(reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()));
    if (s.ok()) s = write_file_atomic(d.path, bytes);
    KERN_RETURN_IF_ERROR(s, "--dump-buffer " + d.name);
    spdlog::info("wrote buffer '{}' ({} B) to {}", d.name, bytes.size(), d.path);
  }
  return {};
}

Status run(const RunOptions& o) {
  KERN_ASSIGN_OR_RETURN(auto opened, open_plan_for(o.plan_path, o.spec));
  const engine::CausalLmContract c = opened.contract;
  std::vector<ResolvedDump> dumps;
  for (const auto& d : o.dumps) {
    int i = opened.plan.find_buffer(d.buffer);
    if (i < 0)
      return make_error(ErrorKind::kUsage, "--dump-buffer: the plan has no buffer '" + d.buffer + "'");
    dumps.push_back({static_cast<uint32_t>(i), d.buffer, d.path});
  }
  KERN_RETURN_IF_ERROR(check_dump_paths(o));
  std::optional<tok::Tokenizer> tokenizer;
  if (!o.tokenizer_path.empty()) {
    KERN_ASSIGN_OR_RETURN(auto t, tok::Tokenizer::load(o.tokenizer_path), "--tokenizer");
    tokenizer = std::move(t);
  }
  KERN_ASSIGN_OR_RETURN(auto prompt, build_prompt(o, tokenizer ? &*tokenizer : nullptr));
  // The one capacity every check and the load use (Model::capacity).
  const uint64_t capacity = o.capacity.value_or(engine::default_capacity(c));
  KERN_RETURN_IF_ERROR(engine::check_capacity(c, capacity), "--capacity");
  KERN_RETURN_IF_ERROR(engine::check_token_ids(o.stop_ids, c.vocab, "stop"), "--stop-ids");
  KERN_RETURN_IF_ERROR(engine::check_token_ids(o.load.end_ids, c.vocab, "end"), kGenerationEndIdsContext);
  engine::Request req{0, prompt.ids, o.steps, stop_ids_for(o, tokenizer ? &*tokenizer : nullptr), o.chunk};
  // A tokenizer's end token beyond a smaller embedding can never be generated.
  std::erase_if(req.stop_ids, [&c](int64_t id) { return id < 0 || static_cast<uint64_t>(id) >= c.vocab; });
  req.speculative = o.spec;
  // Checked before a seed is drawn (and reported) for a run that cannot sample.
  KERN_RETURN_IF_ERROR(engine::check_sampling({o.temperature, o.top_k, o.top_p, o.min_p, 0}),
                       "--temperature/--top-p/--min-p");
  if (o.spec && o.temperature > 0.0f)
    return make_error(ErrorKind::kUsage, "--spec decodes greedily (speculative decoding with sampling is not "
                                         "supported): drop --temperature, or drop --spec to sample");
  KERN_ASSIGN_OR_RETURN(req.sampling, sampling_from_options(o));
  // Dumped buffers must be those of the last generated id's step, not of a
  // discarded surplus step after a stop id: with stop ids, --dump-buffer
  // runs the synchronous loop (without, no step is issued past --steps).
  req.sync = o.sync || (!dumps.empty() && !req.stop_ids.empty());
  // Every id, from any source, is checked against the embedding before the
  // device or the weights are touched.
  if (req.prompt_ids.empty())
    return make_error(ErrorKind::kUsage,
                      "the prompt is empty: give a prompt (--prompt, --prompt-file, stdin or --prompt-ids)");
  if (Status s = engine::check_request(c, capacity, req); !s.ok()) {
    Error e = with_capacity_next_step(s.error(), c, capacity, req.prompt_ids.size(), req.max_tokens);
    return o.prompt_ids ? e : e.with_context("the tokenized prompt");
  }

  ProgressLine progress(stderr, prints_report(o.load) && isatty(STDERR_FILENO) != 0);
  auto loaded = load_model(std::move(opened), o.load, capacity, &progress);
  if (!loaded.ok()) return with_weights_next_step(loaded.error(), o.plan_path, o.load.weights_path);
  auto model = std::move(loaded.value());
  engine::Engine engine(*model);

  // Text streams to stdout as it is produced, unless --json wants stdout
  // for the one object.
  StreamPrinter printer(tokenizer ? &*tokenizer : nullptr, req.stop_ids, o.json ? nullptr : stdout, &progress);
  auto generated = engine::generate(engine, req, &printer);
  progress.clear();
  KERN_ASSIGN_OR_RETURN(auto result, std::move(generated));
  printer.finish();
  KERN_RETURN_IF_ERROR(printer.status());
  KERN_RETURN_IF_ERROR(write_dumps(model->executable(), dumps));
  ReportContext ctx{&req.prompt_ids,  model->device_name(), model->capacity(), &model->phases(),
                    tokenizer ? &printer.text() : nullptr, prompt.tokenize_ms};
  ctx.memory = &model->executable().memory();
  ctx.peak_rss_bytes = peak_rss_bytes();
  // At --tp N every rank reaches this point: rank 0 reports them all.
  std::vector<RankFigures> ranks;
  if (cpu::Collective* tp = model->executable().device().collective(); tp != nullptr && tp->world() > 1) {
    KERN_ASSIGN_OR_RETURN(ranks, gather_rank_figures(*tp, rank_figures_of(*model, tp->rank())),
                          "the memory report");
    ctx.ranks = &ranks;
  }
  ctx.sampling = &req.sampling;
  ctx.random_weights = model->random_weights();
  if (o.json) {
    write_stdout(render_json(result, ctx) + "\n");
  } else if (tokenizer) {
    if (prints_report(o.load)) std::cerr << render_stats(result, ctx);
  } else {
    write_stdout(render_text(result, ctx));
  }
  return flush_stdout();
}

}  // namespace

int run_command(const RunOptions& options) {
  Status s = run(options);
  return s.ok() ? 0 : fail(s.error());
}

}  // namespace kern::run
