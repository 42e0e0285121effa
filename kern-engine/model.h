// A Qwen3 model ready to generate: the loaded Executable, its caller
// contracts (causal-LM, and the speculative one when asked), the capacity every
// request is checked against (the one truth: the KV state was sized from
// it), and the model runner that alone touches the contract buffers.
// Loading is timed by phase: open the plan (mmap, format check,
// verification, contract), select the device, open the weights, then
// Executable::load (kernels, allocation, weight upload, launch staging).
// Opening the plan is separate so callers can check their request against
// the contract before any device or weight work.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "kern-engine/batch_contract.h"
#include "kern-engine/model_runner.h"
#include "kern-engine/causal_lm_contract.h"
#include "kern-engine/spec_contract.h"
#include "kern-load/collective/gloo_collective.h"
#include "kern-load/device_select.h"
#include "kern-load/executable.h"
#include "kern-load/plan_file.h"

namespace kern::engine {

/// A plan with its resolved contracts, not yet loaded.
struct ModelPlan {
  load::PlanFile plan;
  CausalLmContract contract;
  std::optional<SpecContract> spec;  ///< resolved by open_model_plan(path, true)
  std::optional<BatchContract> batch;  ///< the batched decode's, when the plan has decode_batch
  double open_ms = 0;  ///< PlanFile::open + the contracts' resolution, wall time
};

/// Opens `path` and resolves the causal-LM contract, and the speculative one
/// when `speculative`. Errors: PlanFile::open's (kIo, kManifest),
/// resolve_causal_lm_contract's (kManifest); resolve_spec_contract's (kManifest)
/// with "speculative decoding" as context.
Result<ModelPlan> open_model_plan(const std::string& path, bool speculative = false);

/// Wall times of the load phases in milliseconds (steady clock).
struct LoadPhases {
  double plan_ms = 0;          ///< open_model_plan
  double device_ms = 0;        ///< select_device (driver probe, context)
  double weights_open_ms = 0;  ///< Safetensors::open (mmap + header)
  load::LoadTimings executable;  ///< kernels, allocate, weights upload, stage
  double total_ms = 0;         ///< all of the above
};

/// Where and how to load a model.
struct ModelConfig {
  load::DeviceChoice device = load::DeviceChoice::kAuto;
  std::string weights_path;  ///< safetensors file (unused with random_weights_seed)
  std::string kernels_dir;   ///< empty: the plan's directory
  /// KV capacity in tokens (check_capacity); none: default_capacity.
  std::optional<uint64_t> capacity;
  bool graphs = true;  ///< ExecutableOptions::graphs
  /// ExecutableOptions::max_graphs; none: 8, plus one per decode_batch
  /// batch-size bucket (1, 2, 4, ... up to the plan's max_batch) when the
  /// plan has decode_batch, so no bucket silently runs eagerly.
  std::optional<size_t> max_graphs;
  int cuda_ordinal = 0;  ///< CudaDeviceOptions::ordinal: this rank's GPU (kern-run --gpus)
  bool pdl = true;     ///< CudaDeviceOptions::pdl: false launches "pdl" steps plainly (--no-pdl)
  /// Fill the weights on the device with this seed (random_weights.h); no weights file is opened.
  std::optional<uint64_t> random_weights_seed;
  /// NaN-fill the workspace arena before every program (cpu only).
  bool poison_workspace = false;
  /// ExecutableOptions::prepare_weights (the cpu device's packed decode GEMV weights).
  bool pack_gemv_weights = true;
  /// This process's rank of a tensor-parallel world (docs/parallel.md);
  /// none: one rank. Its world must equal the plan's meta.world.
  std::optional<load::GlooOptions> tp;
  /// With `tp`: how long a rank waits for the others to finish loading (ms).
  uint32_t tp_load_timeout_ms = 600000;
};

/// What loading reports as it happens (all may be empty; called on the
/// loading thread).
struct LoadObserver {
  std::function<void(const std::string&)> on_warning;  ///< a device fallback, a load warning
  std::function<void(const std::string&)> on_note;     ///< unused tensors and other notes
  std::function<void(uint64_t, uint64_t)> on_weight_progress;  ///< bytes uploaded, of total
};

class Model {
 public:
  /// Checks the capacity (check_capacity), selects the device, opens the
  /// weights and loads `plan` with KV state for the capacity rounded up to
  /// whole pages. Errors: the capacity's (kUsage), the device's, the
  /// weights file's, Executable::load's.
  static Result<std::unique_ptr<Model>> load(ModelPlan plan, const ModelConfig& config,
                                             const LoadObserver* observer = nullptr);

  /// Wraps an Executable loaded elsewhere (tests: a counting device) whose
  /// state holds at least `capacity` tokens (default: default_capacity).
  /// Resolves the contracts from its plan. Errors: the contracts',
  /// check_capacity's.
  static Result<std::unique_ptr<Model>> adopt(std::unique_ptr<load::Executable> exe, bool speculative = false,
                                              std::optional<uint64_t> capacity = std::nullopt,
                                              std::string device_name = "");

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  /// The KV capacity in tokens every request is checked against.
  uint64_t capacity() const { return capacity_; }
  const CausalLmContract& contract() const { return contract_; }
  /// The speculative contract, or null when not loaded for speculation.
  const SpecContract* spec() const { return spec_ ? &*spec_ : nullptr; }
  /// The batched decode contract, or null when the plan has no decode_batch.
  const BatchContract* batch() const { return batch_ ? &*batch_ : nullptr; }
  load::Executable& executable() { return *exe_; }
  /// The one runner of this Executable (model_runner.h).
  ModelRunner& runner() { return *runner_; }
  const std::string& device_name() const { return device_name_; }
  const LoadPhases& phases() const { return phases_; }
  /// The weights file's safetensors `__metadata__` (empty with random
  /// weights, or when the file has none): gen_random_weights.py writes
  /// "generator" = "gen_random_weights.py", the exporter "format".
  const std::map<std::string, std::string>& weights_metadata() const { return weights_metadata_; }
  /// Whether the weights are random: filled on the device from a seed
  /// (ModelConfig::random_weights_seed) or written by gen_random_weights.py.
  bool random_weights() const;

 private:
  Model(std::unique_ptr<load::Executable> exe, const CausalLmContract& c, std::optional<SpecContract> spec,
        std::optional<BatchContract> batch, uint64_t capacity);

  std::unique_ptr<load::Executable> exe_;
  CausalLmContract contract_;
  std::optional<SpecContract> spec_;
  std::optional<BatchContract> batch_;
  uint64_t capacity_ = 0;
  std::unique_ptr<ModelRunner> runner_;  ///< borrows exe_, contract_, spec_
  std::string device_name_;
  LoadPhases phases_;
  std::map<std::string, std::string> weights_metadata_;
  bool seeded_weights_ = false;  ///< ModelConfig::random_weights_seed was set
};

}  // namespace kern::engine
