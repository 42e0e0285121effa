// `kern-run compare`'s engine (docs/compare.md): loads side A (a plan on a
// device) once and side B twice, drives all three with identical inputs
// (chunked prefill of the prompt, then decode steps fed A's tokens), and
// runs every program span by span through kern-load's cold-path API
// (Executable::run_launches, read_region, write_region). After each span the
// regions both sides write are read and compared: B-replay starts every span
// from A's values of what the span reads (so one bad kernel does not smear
// into later spans), B-free runs on its own end to end. Each span's replay
// gets the replay measure (compare_measure.h): rounding or a different
// function. Each decode step's logits give KL(A||B-free) and argmax flips; a
// second run of A gives the noise floor. The verdict is compare_report.h's.
//
// Not checked here: whether the plans compute the same model (two plans'
// regions are paired by name, dispatches by label).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-load/cpu_device.h"
#include "kern-run/compare_align.h"
#include "kern-run/compare_metrics.h"

namespace kern::run {

/// Where one side runs.
struct CompareSide {
  std::string plan_path;
  std::string device = "cpu";  ///< cpu | cuda | auto (load::parse_device_choice)
  std::string kernels_dir;     ///< empty: the plan's directory
  /// Tests: set, the side runs on a cpu device resolving step symbols
  /// through it (a deliberately broken kernel variant) whatever `device` says.
  load::CpuKernelResolver cpu_kernels;
};

/// Everything one comparison needs.
struct CompareConfig {
  CompareSide a, b;
  bool one_plan = false;  ///< A and B run the same plan: every dispatch is a span
  std::string weights_path;                    ///< safetensors (or random weights)
  std::optional<uint64_t> random_weights_seed;  ///< set: no weights file
  std::vector<int64_t> prompt_ids;             ///< >= 1 ids
  uint64_t steps = 8;                          ///< decode steps compared (>= 1)
  uint64_t chunk = 512;                        ///< prefill chunk in tokens (clamped to the tokens bound)
  Tolerance tol;
  double kl_threshold = 0.01;  ///< nats: PASS needs every step's KL below it
  bool pdl = true;             ///< CudaDeviceOptions::pdl
};

/// One region both sides write in a span, compared.
struct RegionResult {
  std::string name;   ///< "buffer 'qkv'" / "state 'kv_cache'"
  std::string dtype;  ///< "bf16", ... (states: "bf16" for per-token caches, "i32" words otherwise)
  RegionDiff replay, free;
  std::string replay_first_at, free_first_at;  ///< where each first difference was seen ("decode step 2")
  /// False for the contract's next_token: an argmax, whose flips the decode
  /// steps judge (a near-tie flips it by rounding); its measure is shown only.
  bool judged = true;
  ReplayMeasure measure;  ///< of `replay`, over every run (set when the comparison ends)
};

/// One span of one program, over every run of that program.
struct SpanResult {
  std::string program;  ///< "prefill" or "decode"
  uint32_t index = 0;   ///< span index within the program
  DispatchSpan dispatches;
  std::vector<std::string> a_labels, b_labels;  ///< the dispatches' labels
  std::vector<RegionResult> regions;            ///< written by both sides
  std::vector<std::string> only_a, only_b;      ///< written by one side only (not compared)
  uint64_t runs = 0;                            ///< times the span ran (chunks or steps)
  double a_ms = 0, b_ms = 0;  ///< total over runs: A and B-free (wall on cpu, CUDA events on cuda)

  bool replay_ok() const;
  bool free_ok() const;
  /// The worst measure class of the judged regions (kRounding when none).
  ReplayClass replay_class() const;
  /// The judged region of the worst class with the largest rel_l2 (nullptr when none).
  const RegionResult* worst_region() const;
};

/// One decode step, end to end (B-free against A).
struct StepResult {
  uint64_t pos = 0;         ///< position of the step's input token
  int64_t input_id = 0;     ///< the token fed to both sides (A's previous id, or the prompt's last)
  int64_t a_id = 0, b_id = 0;  ///< next_token each side's decode wrote
  StepLogits logits;        ///< A against B-free
  StepLogits floor;         ///< A against A's second run
};

/// What a comparison found (the verdict is derived by compare_report.h).
struct CompareResult {
  std::string a_plan, b_plan, a_device, b_device;
  uint64_t vocab = 0;
  uint64_t prefill_tokens = 0, prefill_chunks = 0;
  std::vector<SpanResult> spans;  ///< prefill spans, then decode spans
  std::vector<StepResult> steps;
  std::string logits_dtype;
};

/// Runs the comparison. Errors (each with the side, "A" or "B", as context):
/// a plan that cannot be opened or has no causal-LM contract, two plans of
/// different vocabularies, a prompt id outside the vocabulary, the load's and
/// the runs' errors, a decode whose logits are not written by any span.
Result<CompareResult> run_compare(const CompareConfig& config);

}  // namespace kern::run
