// Where and how kern-run loads a plan: the options `kern-run` and `kern-run
// bench` share, parsed once (cli_options.h, add_load_options) and read by
// load_model (load_model.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kern::run {

/// Where and how to load.
struct LoadSettings {
  std::string device = "auto";  ///< auto | cpu | cuda
  std::string weights_path;
  std::string kernels_dir;  ///< empty: the plan's directory
  bool verbose = false;     ///< log load notes (unused tensors) at info level
  // GPU path (kern-load graphs and random weights):
  bool eager = false;  ///< --eager: no CUDA graphs (ExecutableOptions::graphs = false)
  bool no_pdl = false;  ///< --no-pdl: "pdl" steps launched plainly (CudaDeviceOptions::pdl = false)
  /// --random-weights SEED: fill the weights on the device (random_weights.h); no weights file is opened.
  std::optional<uint64_t> random_weights_seed{};
  /// --poison-workspace: NaN-fill the workspace arena before every program (cpu only).
  bool poison_workspace = false;
  /// --no-gemv-pack: the cpu device's decode GEMVs read the weights as stored (no packed copy).
  bool no_gemv_pack = false;
  /// The model folder's generation_config.json `eos_token_id` (generation_config.h):
  /// ids that end generation beside the tokenizer's named end tokens (end_tokens.h),
  /// with or without a tokenizer; --ignore-eos turns both off. Empty for a plain .kplan.
  std::vector<int64_t> end_ids;
  /// --tp N: ranks of the tensor-parallel world (docs/parallel.md); 1: none.
  uint32_t tp = 1;
  /// --tp-rank R (set by rank 0 for the ranks it starts, tp_ranks.h); none: rank 0.
  std::optional<uint32_t> tp_rank;
  /// --tp-rendezvous DIR (set by rank 0 with --tp-rank): the run's rendezvous directory.
  std::string tp_rendezvous;
  /// --gpus 0,1,...: the CUDA ordinals of ranks 0, 1, ... (gpu_choice.h); empty: the first --tp visible.
  std::string gpus;
};

/// Whether this process prints a run's statistics and progress on stderr:
/// rank 0, or a run without --tp. Ranks 1 .. N-1 share rank 0's stderr
/// for their errors alone (their stdout is /dev/null): otherwise every
/// rank's statistics would print (docs/parallel.md).
inline bool prints_report(const LoadSettings& s) { return !s.tp_rank.has_value(); }

}  // namespace kern::run
