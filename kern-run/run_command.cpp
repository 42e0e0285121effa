#include "kern-run/run_command.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include "common/file_util.h"
#include "kern-load/executable.h"
#include "kern-run/generate.h"
#include "kern-run/model_load.h"
#include "kern-run/progress.h"
#include "kern-run/prompt_input.h"
#include "kern-run/qwen3_contract.h"
#include "kern-run/report.h"
#include "kern-run/spec_contract.h"
#include "kern-run/spec_generate.h"
#include "kern-run/stream_output.h"
#include "kern-run/tokenizer/tokenizer.h"
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
    auto size = exe.buffer_size_bytes(d.buffer, exe.last_symbol_values());
    if (!size.ok()) return size.error().with_context("--dump-buffer " + d.name);
    std::string bytes(*size, '\0');
    Status s = exe.read_buffer(d.buffer, std::span(reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()));
    if (s.ok()) s = write_file_atomic(d.path, bytes);
    if (!s.ok()) return s.error().with_context("--dump-buffer " + d.name);
    spdlog::info("wrote buffer '{}' ({} B) to {}", d.name, bytes.size(), d.path);
  }
  return {};
}

Status run(const RunOptions& o) {
  auto opened = open_qwen3_plan(o.plan_path);
  if (!opened.ok()) return opened.error();
  const Qwen3Contract c = opened->contract;
  std::optional<SpecContract> spec;
  if (o.spec) {
    auto s = resolve_spec_contract(opened->plan, c);
    if (!s.ok()) return s.error().with_context("--spec");
    spec = *s;
  }
  std::vector<ResolvedDump> dumps;
  for (const auto& d : o.dumps) {
    int i = opened->plan.find_buffer(d.buffer);
    if (i < 0)
      return make_error(ErrorKind::kUsage, "--dump-buffer: the plan has no buffer '" + d.buffer + "'");
    // An unwritable destination is found now, not after the whole run.
    if (Status s = check_output_path(d.path); !s.ok()) return s.error().with_context("--dump-buffer " + d.buffer);
    dumps.push_back({static_cast<uint32_t>(i), d.buffer, d.path});
  }
  std::optional<tok::Tokenizer> tokenizer;
  if (!o.tokenizer_path.empty()) {
    auto t = tok::Tokenizer::load(o.tokenizer_path);
    if (!t.ok()) return t.error().with_context("--tokenizer");
    tokenizer = std::move(t.value());
  }
  auto prompt = build_prompt(o, tokenizer ? &*tokenizer : nullptr);
  if (!prompt.ok()) return prompt.error();
  GenerateRequest req{prompt->ids, o.steps, o.chunk, o.capacity.value_or(default_capacity(c)), {}, nullptr};
  req.stop_ids = stop_ids_for(o, tokenizer ? &*tokenizer : nullptr);
  // Dumped buffers must be those of the last generated id's step, not of a
  // discarded surplus step after a stop id: with stop ids, --dump-buffer
  // runs the synchronous loop (without, no step is issued past --steps).
  req.sync = o.sync || (!dumps.empty() && !req.stop_ids.empty());
  // Every id, from any source, is checked against the embedding before the
  // device or the weights are touched.
  if (Status s = check_request(c, req); !s.ok())
    return o.prompt_ids ? s.error() : s.error().with_context("the tokenized prompt");

  ProgressLine progress(stderr, isatty(STDERR_FILENO) != 0);
  LoadSettings settings{o.device, o.weights_path, o.kernels_dir, req.capacity, o.verbose};
  settings.eager = o.eager;                              // GPU path options
  settings.random_weights_seed = o.random_weights_seed;
  settings.poison_workspace = o.poison_workspace;
  auto model = load_qwen3_model(std::move(opened.value()), settings, &progress);
  if (!model.ok()) return model.error();

  // Text streams to stdout as it is produced, unless --json wants stdout
  // for the one object.
  StreamPrinter printer(tokenizer ? &*tokenizer : nullptr, req.stop_ids, o.json ? nullptr : stdout, &progress);
  req.observer = &printer;
  auto result = spec ? generate_spec(*model->exe, c, *spec, req) : generate(*model->exe, c, req);
  progress.clear();
  if (!result.ok()) return result.error();
  printer.finish();
  KERN_RETURN_IF_ERROR(printer.status());
  KERN_RETURN_IF_ERROR(write_dumps(*model->exe, dumps));
  ReportContext ctx{&req.prompt_ids, model->device_name, req.capacity, &model->phases,
                    tokenizer ? &printer.text() : nullptr, prompt->tokenize_ms};
  ctx.memory = &model->exe->memory();
  ctx.peak_rss_bytes = peak_rss_bytes();
  if (o.json) {
    write_stdout(render_json(result.value(), ctx) + "\n");
  } else if (tokenizer) {
    std::cerr << render_stats(result.value(), ctx);
  } else {
    write_stdout(render_text(result.value(), ctx));
  }
  return flush_stdout();
}

}  // namespace

int exit_code_for(const Error& e) { return e.kind == ErrorKind::kUsage || e.kind == ErrorKind::kIo ? 2 : 1; }

int run_command(const RunOptions& options) {
  Status s = run(options);
  if (s.ok()) return 0;
  std::cerr << "kern-run: error: " << s.error().message << "\n";
  return exit_code_for(s.error());
}

}  // namespace kern::run
