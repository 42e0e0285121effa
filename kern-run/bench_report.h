// kern-run bench's results and how they are printed, like llama-bench: a
// markdown table of tokens/s (mean ± sample standard deviation, and the
// median) per test, or every repetition as csv, json or jsonl. Pure
// formatting: no timing or device work here (bench.h runs the tests).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-engine/decode_stats.h"
#include "kern-engine/spec_stats.h"

namespace kern::run {

/// One test: prompt processing of n_prompt tokens ("pp512") or text
/// generation of n_gen tokens ("tg128"), with each repetition's wall time.
struct BenchTest {
  uint64_t n_prompt = 0;  ///< > 0 for a pp test
  uint64_t n_gen = 0;     ///< > 0 for a tg test
  std::vector<double> ms;  ///< one per repetition (warm-up excluded)
  /// tg tests: the decode loop's steady-state figures over the timed
  /// repetitions (each repetition's steady_part, decode_stats.h).
  engine::DecodeStats decode{};
  /// tg tests: the synchronous decode loop (kern-run --sync) ran, not the
  /// asynchronous one.
  bool sync = false;
  /// tg tests of `kern-run bench --spec`: speculative generation
  /// (the engine's speculative mode); the rounds of every timed repetition. Else empty.
  std::optional<engine::SpecStats> spec{};
  /// tg tests of `kern-run bench --batch`: this many sequences of n_gen ids
  /// each decoded together (the engine's batched mode, docs/batching.md); 0: one sequence.
  uint64_t batch = 0;
  /// With --tp N > 1 (docs/parallel.md): per timed repetition, the ms this
  /// rank spent in the collectives (all-reduces) and the bytes it sent; else empty.
  std::vector<double> collective_ms{};
  std::vector<uint64_t> collective_bytes{};

  /// "pp512", "tg128" (asynchronous decode), "tg128-sync", "tg128-spec" or "tg128-b4" (batch 4).
  std::string name() const;
  /// Tokens processed per repetition (n_prompt + n_gen, times the batch's sequences).
  uint64_t tokens() const { return n_prompt + n_gen * (batch > 0 ? batch : 1); }
};

/// Summary of values: mean, sample standard deviation (n - 1; 0 for one
/// value), median (mean of the middle two for an even count). All 0 when
/// empty.
struct Stats {
  double mean = 0, sd = 0, median = 0;
};
Stats summarize(std::vector<double> values);

/// Tokens/s of each repetition of `t` (tokens x 1000 / ms; 0 where ms is 0).
std::vector<double> tokens_per_s(const BenchTest& t);

/// What was measured on what.
struct BenchInfo {
  std::string plan;         ///< the plan's path as given
  std::string plan_sha256;  ///< lower-case hex of the .kplan's bytes
  std::string device;       ///< Device::name()
  std::string driver;       ///< the NVIDIA driver version, or "none" (cpu)
  std::string build_commit; ///< `git describe --always --dirty` at build time
  uint64_t chunk = 0;       ///< prefill chunk in tokens
  uint64_t warmup = 0;      ///< warm-up runs per test (not reported)
};

/// Output formats of `-o`.
enum class BenchFormat { kMd, kCsv, kJson, kJsonl };

/// Parses "md", "csv", "json" or "jsonl"; else an error (kUsage) naming it.
Result<BenchFormat> parse_bench_format(const std::string& s);

/// The markdown table: a header line naming plan, sha256, device, driver
/// and commit, then | test | t/s | median t/s | reps | rows; when there are
/// tg tests, a second table of their decode loop per steady-state step:
/// | test | mode | launches | host writes | host waits | GPU busy ms |
/// GPU wall ms | host gap us | (GPU columns "-" without device timers);
/// with speculative tests, a third: | test | block | tokens/round |
/// acceptance | draft ms | verify ms | precompute ms | ms/round |.
std::string render_bench_md(const BenchInfo& info, const std::vector<BenchTest>& tests);
/// render_bench_md in pieces, for printing each test's row as it finishes:
/// the header lines and the first table's head; one test's row of the first
/// table; the tables after it (decode loop, speculative) for all `tests`.
std::string render_bench_md_head(const BenchInfo& info);
std::string render_bench_md_row(const BenchTest& t);
std::string render_bench_md_tail(const std::vector<BenchTest>& tests);
/// With --tp N > 1 (tests with collective_ms): per test the median ms in
/// the collectives, its share of the median repetition and the MB this rank
/// sent per repetition; "" for a one-rank run (its output stays as it was).
std::string render_collective_md(const std::vector<BenchTest>& tests);
/// render_bench_csv in pieces: the header row; one test's rows.
std::string render_bench_csv_head();
std::string render_bench_csv_rows(const BenchInfo& info, const BenchTest& t);
/// One line of render_bench_jsonl.
std::string render_bench_jsonl_row(const BenchInfo& info, const BenchTest& t);

/// A header row, then one row per repetition: plan, plan_sha256, device,
/// driver, build_commit, chunk, test, n_prompt, n_gen, rep, ms, tokens_per_s.
std::string render_bench_csv(const BenchInfo& info, const std::vector<BenchTest>& tests);
/// One JSON array with an object per test: the info fields, test, n_prompt,
/// n_gen, samples_ms, samples_ts, avg_ts, stddev_ts, median_ts; tg tests
/// add decode_mode ("async"/"sync"), decode_steady_steps and the per-step decode_* figures of
/// kern-run --json (null where not measured); speculative tests add the
/// `spec` object of kern-run --json (spec_report.h).
std::string render_bench_json(const BenchInfo& info, const std::vector<BenchTest>& tests);
/// The objects of render_bench_json, one per line.
std::string render_bench_jsonl(const BenchInfo& info, const std::vector<BenchTest>& tests);

}  // namespace kern::run
