// Where and how kern-run loads a plan: the options `kern-run` and `kern-run
// bench` share, parsed once (cli_options.h, add_load_options) and read by
// load_qwen3_model (model_load.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kern::run {

/// Where and how to load.
struct LoadSettings {
  std::string device = "auto";  ///< auto | cpu | cuda
  std::string weights_path;
  std::string kernels_dir;  ///< empty: the plan's directory
  uint64_t capacity = 0;    ///< state capacity in tokens (set by the command: --capacity or the default)
  bool verbose = false;     ///< log load notes (unused tensors) at info level
  // GPU path (kern-load graphs and random weights):
  bool eager = false;  ///< --eager: no CUDA graphs (ExecutableOptions::graphs = false)
  bool no_pdl = false;  ///< --no-pdl: "pdl" steps launched plainly (CudaDeviceOptions::pdl = false)
  /// --random-weights SEED: fill the weights on the device (random_weights.h); no weights file is opened.
  std::optional<uint64_t> random_weights_seed{};
  /// --poison-workspace: NaN-fill the workspace arena before every program (cpu only).
  bool poison_workspace = false;
};

}  // namespace kern::run
