// kern-run compare's command line (compare_command.h).
#include "kern-run/compare_command.h"

#include <iostream>
#include <optional>

#include "CLI/CLI.hpp"
#include "kern-run/cli_checks.h"
#include "kern-run/cli_errors.h"
#include "kern-run/cli_options.h"
#include "kern-run/compare_report.h"
#include "kern-run/compare_session.h"
#include "kern-run/stream_output.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {

namespace {

/// Every error before a verdict exits 2: 1 is FAIL.
int error_exit(const Error& e) {
  print_error(e.message);
  return 2;
}

}  // namespace

int run_compare_command(int argc, char** argv) {
  CompareConfig cfg;
  std::string plan_b, ids_text, prompt_text, tokenizer_path;
  std::string device_b;
  uint64_t random_seed = 0;
  bool json = false, no_pdl = false;
  CLI::App app{"kern-run compare: run two plans, or one plan on two devices, span by span on identical inputs; "
               "report where they part ways and a verdict (PASS 0, FAIL 1, INCONCLUSIVE 3; errors 2). "
               "docs/compare.md",
               "kern-run compare"};
  app.add_option("a", cfg.a.plan_path, "plan A, the reference (.kplan)")->required();
  app.add_option("b", plan_b, "plan B (default: A again, on --device-b)");
  auto* weights = app.add_option("--weights", cfg.weights_path, "safetensors file with the plans' weights");
  auto* random = add_number_option(app, "--random-weights", random_seed,
                                   "fill the weights with deterministic random values of this seed (no file)");
  random->excludes(weights);
  app.add_option("--device-a", cfg.a.device, "A's device: cpu | cuda | auto")->capture_default_str();
  app.add_option("--device-b", device_b, "B's device (default: cuda with one plan, --device-a's with two)");
  app.add_option("--kernels-a", cfg.a.kernels_dir, "A's cubin directory (default: A's plan directory)");
  app.add_option("--kernels-b", cfg.b.kernels_dir, "B's cubin directory (default: B's plan directory)");
  auto* ids = app.add_option("--prompt-ids", ids_text, "comma-separated prompt token ids, e.g. 1,2,3");
  auto* text = app.add_option("--prompt", prompt_text, "prompt text (needs --tokenizer)");
  ids->excludes(text);
  app.add_option("--tokenizer", tokenizer_path, "HF tokenizer.json for --prompt");
  add_number_option(app, "--steps", cfg.steps, "decode steps compared (>= 1)", {.min = 1})->capture_default_str();
  add_number_option(app, "--chunk", cfg.chunk, "prefill chunk in tokens (clamped to the tokens bound)", {.min = 1})
      ->capture_default_str();
  add_number_option(app, "--kl-threshold", cfg.kl_threshold,
                    "PASS needs every decode step's KL(A||B) below this (nats)", {.min = 0, .above_min = true})
      ->capture_default_str();
  add_number_option(app, "--rtol", cfg.tol.rtol, "a span's region agrees when |a-b| <= atol + rtol x max|A|",
                    RealRange{})
      ->capture_default_str();
  add_number_option(app, "--atol", cfg.tol.atol, "see --rtol", RealRange{})->capture_default_str();
  app.add_flag("--no-pdl", no_pdl, "launch \"pdl\" steps plainly (cuda)");
  app.add_flag("--json", json, "print one JSON object on stdout instead of the report");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_error_exit(app, e);
  }
  if (weights->count() == 0 && random->count() == 0)
    return error_exit(make_error(ErrorKind::kUsage, "--weights is required (or --random-weights SEED)"));
  if (random->count() > 0) cfg.random_weights_seed = random_seed;
  cfg.pdl = !no_pdl;
  cfg.one_plan = plan_b.empty() || plan_b == cfg.a.plan_path;
  cfg.b.plan_path = plan_b.empty() ? cfg.a.plan_path : plan_b;
  cfg.b.device = !device_b.empty() ? device_b : plan_b.empty() ? "cuda" : cfg.a.device;
  if (ids->count() > 0) {
    auto parsed = parse_id_list(ids_text);
    if (!parsed.ok()) return error_exit(parsed.error());
    cfg.prompt_ids = std::move(parsed.value());
  } else if (text->count() > 0) {
    if (tokenizer_path.empty())
      return error_exit(make_error(ErrorKind::kUsage, "--prompt needs --tokenizer tokenizer.json"));
    auto tok = tok::Tokenizer::load(tokenizer_path);
    if (!tok.ok()) return error_exit(tok.error().with_context("--tokenizer"));
    auto encoded = tok->encode(prompt_text);
    if (!encoded.ok()) return error_exit(encoded.error().with_context("--prompt"));
    cfg.prompt_ids.assign(encoded->begin(), encoded->end());
  } else {
    return error_exit(make_error(ErrorKind::kUsage, "no prompt: give --prompt-ids 1,2,3 (or --prompt TEXT --tokenizer F)"));
  }
  if (cfg.prompt_ids.empty()) return error_exit(make_error(ErrorKind::kUsage, "the prompt is empty"));
  auto result = run_compare(cfg);
  if (!result.ok()) return error_exit(result.error());
  const VerdictResult v = judge(*result, cfg.kl_threshold);
  write_stdout(json ? render_compare_json(*result, v, cfg) + "\n" : render_compare_text(*result, v, cfg));
  if (Status s = flush_stdout(); !s.ok()) return error_exit(s.error());
  return verdict_exit_code(v.verdict);
}

}  // namespace kern::run
