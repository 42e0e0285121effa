// `kern-run bench`, like llama-bench: for each prompt length (-p) a prompt
// processing test (chunked `prefill` of that many tokens from position 0,
// then a device synchronize) and for each generation length (-n) a text
// generation test (that many `decode` steps from position 0 through the
// generation's decode loop, asynchronous and/or synchronous (--decode),
// each token read back, greedy; with steady-state per-step launches, host
// writes, host waits and, on cuda, GPU busy time and host gap). Prompt ids are pseudo-random in [0, vocab) from
// a fixed seed. Each test runs `warmup` times unreported, then `reps` times.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-engine/model.h"
#include "kern-run/bench_report.h"

namespace kern::run {

/// What to measure.
struct BenchPlan {
  std::vector<uint64_t> prompt_lengths;  ///< pp tests; 0 entries are skipped
  std::vector<uint64_t> gen_lengths;     ///< tg tests; 0 entries are skipped
  uint64_t reps = 5;
  uint64_t warmup = 1;
  uint64_t chunk = 512;   ///< prefill chunk (clamped to the tokens bound)
  uint64_t seed = 1234;   ///< prompt ids' seed
  bool decode_async = true;  ///< tg tests with the asynchronous decode loop (`--decode async|both`)
  bool decode_sync = false;  ///< tg tests with the synchronous one (`--decode sync|both`)
  /// `--spec`: per generation length also a speculative test (`tgN-spec`:
  /// a 1-token prompt, then N ids through the engine's speculative rounds, engine.h).
  bool spec = false;
  /// `--batch 1,2,4,8`: per generation length one batched test per size
  /// (`tgN-bB`: B sequences of 1-token prompts, N ids each, decoded together
  /// through decode_batch; t/s counts every sequence's ids). Empty: none.
  std::vector<uint64_t> batches;
};

/// Most warmup runs, and most repetitions, per test (keeps warmup + reps
/// far from overflow).
inline constexpr uint64_t kMaxBenchRuns = 1000000;

/// The tests `plan` asks for, without measurements: one pp test per
/// non-zero prompt length, then per non-zero generation length an
/// asynchronous tg test and/or a synchronous one (`tgN-sync`).
std::vector<BenchTest> bench_tests(const BenchPlan& plan);

/// The capacity in tokens the tests need (the longest test, or the whole
/// pages of a batched test's sequences, at least 1).
uint64_t bench_capacity(const BenchPlan& plan);

/// Runs every test on `model` (loaded with at least bench_capacity tokens,
/// plus a block for speculative tests, which need the model's speculative
/// contract). pp tests run the model runner's prefill; tg tests go through
/// the engine (engine.h). Errors get the test name as context ("pp512: ...").
/// `on_test_done`, when set, is called with each test as soon as its
/// repetitions are done (bench prints its row then).
Result<std::vector<BenchTest>> run_bench(engine::Model& model, const BenchPlan& plan,
                                         const std::function<void(const BenchTest&)>& on_test_done = {});

/// `kern-run bench PLAN --weights W [-p 512] [-n 128] [-r 5] [-o md]`:
/// argv[0] is "bench". Prints the chosen format on stdout (and the md table
/// on stderr for the other formats). Exit codes as run_command.
int run_bench_command(int argc, char** argv);

}  // namespace kern::run
