// `kern-run bench`: prompt processing and generation tests, llama-bench style (bench.h).
#include "kern-run/bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <variant>

#include "CLI/CLI.hpp"
#include "common/sha256.h"
#include "common/build_info.h"
#include "kern-run/cli_checks.h"
#include "kern-run/cli_errors.h"
#include "kern-run/cli_options.h"
#include "kern-engine/clock.h"
#include "kern-engine/engine.h"
#include "kern-engine/generate.h"
#include "kern-engine/page_allocator.h"
#include "kern-engine/request.h"
#include "kern-run/load_model.h"
#include "kern-run/progress.h"
#include "kern-run/stream_output.h"
#include "kern-run/weights_hint.h"

namespace kern::run {
namespace {


using engine::Clock;

/// One run of pp test `test`: its n_prompt ids from position 0 through the
/// model runner as a generation prefills them — chunks of `prefill`, the
/// last through `prefill_last` when the plan has it and the prompt has 2 or
/// more ids (CausalLmContract::prefill_last_for; the prompt up to its
/// next id, as llama-bench's pp computes the last row's logits), else all
/// through `prefill` — then a device synchronize (cuda enqueues: wait for
/// the last chunk). Returns the wall time.
Result<double> run_prompt_once(engine::Model& model, const BenchTest& test, const BenchPlan& plan,
                               const std::vector<int64_t>& ids) {
  engine::ModelRunner& runner = model.runner();
  KERN_RETURN_IF_ERROR(runner.write_block_table());
  const uint64_t chunk = model.contract().clamp_chunk(plan.chunk);
  const std::span<const int64_t> prompt = std::span(ids).first(test.n_prompt);
  // Where the last chunk starts (the prompt is at least 1 token: -p >= 1).
  const uint64_t last =
      model.contract().prefill_last_for(prompt.size()) ? (prompt.size() - 1) / chunk * chunk : prompt.size();
  auto t0 = Clock::now();
  KERN_RETURN_IF_ERROR(runner.prefill(prompt.first(last), 0, chunk));
  if (last < prompt.size()) {
    auto first = runner.prefill_last(prompt.subspan(last), last);
    if (!first.ok()) return first.error();
  }
  KERN_RETURN_IF_ERROR(model.executable().synchronize());
  return engine::ms_since(t0);
}

/// One run of tg test `test` through the engine: a 1-token prompt
/// (`first_id`), then test.n_gen ids, no stop ids (every step's token is
/// read back, like kern-run's); plain decode (asynchronous, or synchronous
/// for tgN-sync) or speculative rounds (tgN-spec). Returns the wall time.
Result<double> run_gen_once(engine::Engine& engine, const BenchTest& test, const BenchPlan& plan, int64_t first_id,
                            engine::SequenceResult& result) {
  engine::Request req{0, {first_id}, test.n_gen, {}, plan.chunk};
  req.sync = test.sync && !test.spec;
  req.speculative = test.spec.has_value();
  auto t0 = Clock::now();
  KERN_ASSIGN_OR_RETURN(result, engine::generate(engine, std::move(req)));
  return engine::ms_since(t0);
}

/// One run of batched tg test `test`: test.batch sequences, each a 1-token
/// prompt (ids[i]) and test.n_gen ids, no stop ids, through `engine` at
/// max_batch test.batch. Returns the wall time (admission to the last id).
Result<double> run_batch_once(engine::Engine& engine, const BenchTest& test, const std::vector<int64_t>& ids) {
  auto t0 = Clock::now();
  for (uint64_t i = 0; i < test.batch; ++i)
    KERN_RETURN_IF_ERROR(engine.add_request({i, {ids[i % ids.size()]}, test.n_gen, {}, 1}));
  uint64_t taken = 0;
  // Bounded: each step prefills nothing (1-token prompts) and decodes one id per sequence.
  for (uint64_t k = 0; !engine.idle() && k <= 4 * (test.n_gen + 2); ++k) {
    KERN_ASSIGN_OR_RETURN(auto events, engine.step());
    for (const engine::TokenEvent& ev : events) {
      taken += ev.ids.size();
      if (ev.error) return *ev.error;
    }
  }
  if (taken != test.batch * test.n_gen)
    return make_error(ErrorKind::kDevice, "the batch gave " + std::to_string(taken) + " ids, not " +
                                              std::to_string(test.batch * test.n_gen));
  return engine::ms_since(t0);
}

/// The NVIDIA kernel driver's version from /proc/driver/nvidia/version
/// ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ..."), or
/// "none" for the cpu device, or "unknown".
std::string driver_version(const std::string& device_name) {
  if (device_name.rfind("cuda", 0) != 0) return "none";
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(f, line)) return "unknown";
  auto at = line.find("Kernel Module");
  if (at == std::string::npos) return "unknown";
  std::string rest = line.substr(at + 13);
  size_t b = rest.find_first_not_of(' ');
  if (b == std::string::npos) return "unknown";
  return rest.substr(b, rest.find(' ', b) - b);
}

Result<std::vector<uint64_t>> parse_lengths(const std::string& text, const std::string& option,
                                            const std::string& noun) {
  KERN_ASSIGN_OR_RETURN(auto ids, parse_id_list(text, option, noun));
  std::vector<uint64_t> out;
  for (int64_t v : ids) {
    if (v < 0) return make_error(ErrorKind::kUsage, option + ": " + std::to_string(v) + " is negative");
    out.push_back(static_cast<uint64_t>(v));
  }
  return out;
}

}  // namespace

uint64_t bench_capacity(const BenchPlan& plan) {
  uint64_t n = 1;
  for (uint64_t p : plan.prompt_lengths) n = std::max(n, p);
  for (uint64_t g : plan.gen_lengths) {
    n = std::max(n, g);
    for (uint64_t b : plan.batches)
      n = std::max(n, b * engine::pages_for_tokens(g + 1) * engine::kKvBlockTokens);
  }
  return n;
}

std::vector<BenchTest> bench_tests(const BenchPlan& plan) {
  std::vector<BenchTest> tests;
  for (uint64_t p : plan.prompt_lengths)
    if (p > 0) tests.push_back({p, 0, {}, {}, false});
  for (uint64_t g : plan.gen_lengths) {
    if (g == 0) continue;
    if (plan.decode_async) tests.push_back({0, g, {}, {}, false});
    if (plan.decode_sync) tests.push_back({0, g, {}, {}, true});
    if (plan.spec) tests.push_back({0, g, {}, {}, true, engine::SpecStats{}});
    for (uint64_t b : plan.batches)
      if (b > 0) tests.push_back({0, g, {}, {}, false, {}, b});
  }
  return tests;
}

Result<std::vector<BenchTest>> run_bench(engine::Model& model, const BenchPlan& plan,
                                         const std::function<void(const BenchTest&)>& on_test_done) {
  std::vector<BenchTest> tests = bench_tests(plan);
  std::mt19937_64 rng(plan.seed);
  std::vector<int64_t> ids(bench_capacity(plan));
  for (int64_t& id : ids) id = static_cast<int64_t>(rng() % model.contract().vocab);
  engine::Engine engine(model);
  for (BenchTest& t : tests) {
    if (t.spec && model.spec() == nullptr)
      return make_error(ErrorKind::kUsage, t.name() + ": the plan has no speculative contract");
    std::vector<engine::DecodeStepRecord> records;  // the timed repetitions' decode steps
    std::optional<engine::Engine> batched;
    if (t.batch > 0) {
      batched.emplace(model);
      KERN_RETURN_IF_ERROR(batched->set_max_batch(t.batch), t.name());
    }
    const load::Device& device = model.executable().device();
    for (uint64_t i = 0; i < plan.warmup + plan.reps; ++i) {
      const auto before = device.collective_stats();
      engine::SequenceResult r;
      auto ms = t.n_prompt > 0 ? run_prompt_once(model, t, plan, ids)
                : t.batch > 0  ? run_batch_once(*batched, t, ids)
                               : run_gen_once(engine, t, plan, ids[0], r);
      KERN_RETURN_IF_ERROR(ms, t.name());
      if (i < plan.warmup) continue;
      t.ms.push_back(*ms);
      if (const auto after = device.collective_stats(); after && before) {
        t.collective_ms.push_back(after->wait_ms - before->wait_ms);
        t.collective_bytes.push_back(after->bytes_sent - before->bytes_sent);
      }
      if (t.batch > 0) continue;  // no per-step records in the batched mode
      if (t.spec) {
        t.spec->merge(*r.spec);
        continue;
      }
      // Each repetition is one sequence with its own warm-up and drain steps.
      auto steady = engine::steady_part(r.records);
      records.insert(records.end(), steady.begin(), steady.end());
    }
    if (t.n_gen > 0 && !t.spec && t.batch == 0) t.decode = engine::average_decode(records);
    if (on_test_done) on_test_done(t);
  }
  return tests;
}

namespace {

/// A parsed `kern-run bench` command line.
struct BenchCommand {
  std::string plan_path;
  LoadSettings settings;
  BenchPlan plan;
  BenchFormat format = BenchFormat::kMd;
};

/// Parses argv. Returns the command, or the exit code when parsing ends the
/// command: --help (0), a CLI11 error (2, printed by CLI11) or a usage error
/// (2, printed here).
std::variant<BenchCommand, int> parse_bench_command(int argc, char** argv) {
  BenchCommand cmd;
  std::string p_text = "512", n_text = "128", format_text = "md", decode_text = "async", batch_text;
  BenchPlan& plan = cmd.plan;
  CLI::App app{"kern-run bench: prompt processing (pp) and text generation (tg) speed, like llama-bench",
               "kern-run bench"};
  app.add_option("plan", cmd.plan_path, "the .kplan written by kern-verify, or a model folder (examples/convert_hf.py)")
      ->required();
  LoadOptionsParser load(app, cmd.settings);
  app.add_option("--decode", decode_text,
                 "tg tests' decode loop: async, sync (host writes and waits every step, as kern-run --sync) "
                 "or both (tgN and tgN-sync)")
      ->capture_default_str();
  app.add_option("-p,--n-prompt", p_text, "prompt lengths, comma-separated (0: no pp test)")->capture_default_str();
  app.add_option("-n,--n-gen", n_text, "generation lengths, comma-separated (0: no tg test)")->capture_default_str();
  // Bounded, so warmup + reps cannot overflow.
  add_number_option(app, "-r,--repetitions", plan.reps, "timed repetitions per test", {.min = 1, .max = kMaxBenchRuns})
      ->capture_default_str();
  add_number_option(app, "--warmup", plan.warmup, "untimed runs before each test's repetitions",
                    {.min = 0, .max = kMaxBenchRuns})
      ->capture_default_str();
  add_number_option(app, "--chunk", plan.chunk, "prefill chunk in tokens (clamped to the tokens bound)", {.min = 1})
      ->capture_default_str();
  add_number_option(app, "--seed", plan.seed, "seed of the random prompt ids")->capture_default_str();
  app.add_option("-o,--output", format_text, "md | csv | json | jsonl (every repetition)")->capture_default_str();
  app.add_flag("--spec", plan.spec, "also a speculative test per -n length (tgN-spec; a manifest with a DSpark "
                                    "draft, docs/speculative.md): tokens per round, acceptance, ms per round by phase");
  app.add_option("--batch", batch_text,
                 "batch sizes, comma-separated: per -n length a batched test per size (tgN-bB: B sequences decoded "
                 "together, t/s over all their ids; docs/batching.md)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_error_exit(app, e);
  }
  if (Status s = load.finish(cmd.plan_path); !s.ok()) return fail(s.error());
  auto format = parse_bench_format(format_text);
  if (!format.ok()) return fail(format.error());
  cmd.format = *format;
  if (decode_text != "async" && decode_text != "sync" && decode_text != "both")
    return fail(make_error(ErrorKind::kUsage, "--decode: unknown mode '" + decode_text +
                                                  "' (expected async, sync or both)"));
  plan.decode_async = decode_text != "sync";
  plan.decode_sync = decode_text != "async";
  auto p = parse_lengths(p_text, "-p", "prompt length");
  if (!p.ok()) return fail(p.error());
  auto n = parse_lengths(n_text, "-n", "generation length");
  if (!n.ok()) return fail(n.error());
  plan.prompt_lengths = *p;
  plan.gen_lengths = *n;
  if (!batch_text.empty()) {
    auto b = parse_lengths(batch_text, "--batch", "batch size");
    if (!b.ok()) return fail(b.error());
    for (uint64_t v : *b)
      if (v == 0) return fail(make_error(ErrorKind::kUsage, "--batch: a batch size must be at least 1"));
    plan.batches = *b;
  }
  if (bench_tests(plan).empty())
    return fail(make_error(ErrorKind::kUsage,
                           "nothing to measure: every -p and -n length is 0 (or the lists are empty)"));
  return cmd;
}

/// Loads the plan and runs the command's tests; prints the results (the
/// table on stdout, or on stderr beside the csv/json on stdout).
Status execute_bench(BenchCommand& cmd) {
  KERN_ASSIGN_OR_RETURN(auto opened, open_plan_for(cmd.plan_path, cmd.plan.spec));
  const engine::CausalLmContract c = opened.contract;
  const uint64_t needed = bench_capacity(cmd.plan) + (opened.spec ? opened.spec->block : 0);
  if (needed > c.table_tokens())
    return make_error(ErrorKind::kUsage, "a test of " + std::to_string(needed) + " tokens exceeds the block table (" +
                                             std::to_string(c.table_tokens()) + " tokens)");
  // The capacity kern-run loads with by default (a plan's literal state
  // offsets may assume it), or more when a test needs it.
  const uint64_t capacity = std::max(needed, engine::default_capacity(c));
  KERN_ASSIGN_OR_RETURN(auto digest, sha256_file(cmd.plan_path));
  ProgressLine progress(stderr, prints_report(cmd.settings) && isatty(STDERR_FILENO) != 0);
  auto loaded = load_model(std::move(opened), cmd.settings, capacity, &progress);
  if (!loaded.ok()) return with_weights_next_step(loaded.error(), cmd.plan_path, cmd.settings.weights_path);
  auto model = std::move(loaded.value());
  BenchInfo info{cmd.plan_path,  hex_encode(digest),          model->device_name(), driver_version(model->device_name()),
                 kBuildCommit,   c.clamp_chunk(cmd.plan.chunk), cmd.plan.warmup};
  // The header at once and each test's row as it finishes (as llama-bench
  // prints): the table on stdout, or on stderr beside the machine format on
  // stdout; csv and jsonl stream their rows too, json (one array) is
  // printed whole at the end so that a failed test leaves no broken array.
  const bool md = cmd.format == BenchFormat::kMd;
  auto out = [](const std::string& text) {
    write_stdout(text);
    (void)flush_stdout();  // a failure is latched and reported when the command ends
  };
  auto table = [&](const std::string& text) {
    if (md) {
      out(text);
    } else if (prints_report(cmd.settings)) {
      std::cerr << text << std::flush;
    }
  };
  table(render_bench_md_head(info));
  if (cmd.format == BenchFormat::kCsv) out(render_bench_csv_head());
  auto on_test_done = [&](const BenchTest& t) {
    table(render_bench_md_row(t));
    if (cmd.format == BenchFormat::kCsv) out(render_bench_csv_rows(info, t));
    if (cmd.format == BenchFormat::kJsonl) out(render_bench_jsonl_row(info, t));
  };
  KERN_ASSIGN_OR_RETURN(auto tests, run_bench(*model, cmd.plan, on_test_done));
  if (cmd.format == BenchFormat::kJson) out(render_bench_json(info, tests));
  table(render_bench_md_tail(tests));
  return {};
}

}  // namespace

int run_bench_command(int argc, char** argv) {
  auto parsed = parse_bench_command(argc, argv);
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  Status s = execute_bench(std::get<BenchCommand>(parsed));
  return s.ok() ? 0 : fail(s.error());  // main checks that stdout was written
}

}  // namespace kern::run
