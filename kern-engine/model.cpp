// Opening and loading a Qwen3 model, timed by phase (model.h).
#include "kern-engine/model.h"

#include <filesystem>

#include "kern-engine/clock.h"
#include "kern-engine/request.h"
#include "kern-load/safetensors.h"

namespace kern::engine {

Result<ModelPlan> open_model_plan(const std::string& path, bool speculative) {
  auto t0 = Clock::now();
  KERN_ASSIGN_OR_RETURN(auto plan, load::PlanFile::open(path));
  KERN_ASSIGN_OR_RETURN(auto contract, resolve_causal_lm_contract(plan));
  std::optional<SpecContract> spec;
  if (speculative) {
    KERN_ASSIGN_OR_RETURN(spec, resolve_spec_contract(plan, contract), "speculative decoding");
  }
  KERN_ASSIGN_OR_RETURN(auto batch, resolve_batch_contract(plan, contract));
  return ModelPlan{std::move(plan), contract, spec, batch, ms_since(t0)};
}

Model::Model(std::unique_ptr<load::Executable> exe, const CausalLmContract& c, std::optional<SpecContract> spec,
             std::optional<BatchContract> batch, uint64_t capacity)
    : exe_(std::move(exe)), contract_(c), spec_(spec), batch_(batch), capacity_(capacity) {
  runner_ = std::make_unique<ModelRunner>(*exe_, contract_, spec_ ? &*spec_ : nullptr);
  runner_->set_batch(batch_ ? &*batch_ : nullptr);
}

Result<std::unique_ptr<Model>> Model::adopt(std::unique_ptr<load::Executable> exe, bool speculative,
                                            std::optional<uint64_t> capacity, std::string device_name) {
  KERN_ASSIGN_OR_RETURN(auto c, resolve_causal_lm_contract(exe->plan_file()));
  std::optional<SpecContract> spec;
  if (speculative) {
    KERN_ASSIGN_OR_RETURN(spec, resolve_spec_contract(exe->plan_file(), c), "speculative decoding");
  }
  KERN_ASSIGN_OR_RETURN(auto batch, resolve_batch_contract(exe->plan_file(), c));
  const uint64_t cap = capacity.value_or(default_capacity(c));
  KERN_RETURN_IF_ERROR(check_capacity(c, cap));
  std::unique_ptr<Model> m(new Model(std::move(exe), c, spec, batch, cap));
  m->device_name_ = device_name.empty() ? m->exe_->device().name() : std::move(device_name);
  return m;
}

bool Model::random_weights() const {
  const auto it = weights_metadata_.find("generator");
  return seeded_weights_ || (it != weights_metadata_.end() && it->second == "gen_random_weights.py");
}

Result<std::unique_ptr<Model>> Model::load(ModelPlan plan, const ModelConfig& config, const LoadObserver* observer) {
  const uint64_t capacity = config.capacity.value_or(default_capacity(plan.contract));
  KERN_RETURN_IF_ERROR(check_capacity(plan.contract, capacity));
  LoadPhases phases;
  phases.plan_ms = plan.open_ms;
  auto t0 = Clock::now();
  std::string note;
  load::CudaDeviceOptions cuda_options;
  cuda_options.pdl = config.pdl;
  cuda_options.ordinal = config.cuda_ordinal;
  KERN_ASSIGN_OR_RETURN(auto device, load::select_device(config.device, &note, cuda_options));
  if (!note.empty() && observer != nullptr && observer->on_warning) observer->on_warning(note);
  const uint32_t plan_world = plan.plan.plan().world();
  const uint32_t run_world = config.tp ? config.tp->world : 1;
  if (plan_world != run_world)
    return make_error(ErrorKind::kUsage, "the plan " + plan.plan.path() + " is sharded for --tp " +
                                             std::to_string(plan_world) + " but this run has --tp " +
                                             std::to_string(run_world));
  cpu::Collective* collective_view = nullptr;  // owned by the device once attached
  if (run_world > 1) {
    KERN_ASSIGN_OR_RETURN(auto collective, load::connect_gloo(*config.tp), "tensor parallelism");
    collective_view = collective.get();
    const auto* sha = plan.plan.plan().manifest_sha256();
    KERN_RETURN_IF_ERROR(load::check_same_plan(*collective, std::span<const uint8_t>(sha->data(), sha->size())));
    KERN_RETURN_IF_ERROR(device->attach_collective(std::move(collective)), "tensor parallelism");
  }
  const std::string device_name = device->name();
  phases.device_ms = ms_since(t0);
  t0 = Clock::now();
  std::optional<load::Safetensors> weights;  // none with random weights
  std::map<std::string, std::string> weights_metadata;
  if (!config.random_weights_seed) {
    KERN_ASSIGN_OR_RETURN(auto opened_weights, load::Safetensors::open(config.weights_path));
    weights_metadata = opened_weights.metadata();
    weights = std::move(opened_weights);
  }
  phases.weights_open_ms = ms_since(t0);

  load::ExecutableOptions eo;
  // The KV cache is paged (kKvBlockTokens per page): a capacity inside a page
  // still addresses the whole page, so the state holds whole pages; requests
  // are checked against the capacity itself (Model::capacity).
  eo.capacity_tokens = (capacity + kKvBlockTokens - 1) / kKvBlockTokens * kKvBlockTokens;
  eo.graphs = config.graphs;
  eo.max_graphs = config.max_graphs.value_or(8);
  if (!config.max_graphs && plan.batch) {
    // The buckets of batch_bucket (batch_engine.h): powers of two below max_batch, and max_batch.
    ++eo.max_graphs;
    for (uint64_t b = 1; b < plan.batch->max_batch; b *= 2) ++eo.max_graphs;
  }
  eo.random_weights_seed = config.random_weights_seed;
  const std::string plan_path = plan.plan.path();
  std::filesystem::path kernels_dir = config.kernels_dir.empty() ? std::filesystem::path(plan_path).parent_path()
                                                                 : std::filesystem::path(config.kernels_dir);
  eo.kernels_dir = kernels_dir.empty() ? std::filesystem::current_path().string() : kernels_dir.string();
  eo.poison_workspace = config.poison_workspace;
  eo.prepare_weights = config.pack_gemv_weights;
  load::LoadMonitor monitor;
  monitor.timings = &phases.executable;
  if (observer != nullptr) {
    monitor.on_warning = observer->on_warning;
    monitor.on_note = observer->on_note;
    monitor.on_weight_progress = observer->on_weight_progress;
  }
  // The Executable keeps the weights file mapped: the cpu device reads the
  // weights in place from it (no copy).
  auto loaded = weights ? load::Executable::load(std::move(plan.plan), std::move(device), std::move(*weights), eo,
                                                 &monitor)
                        : load::Executable::load(std::move(plan.plan), std::move(device), nullptr, eo, &monitor);
  KERN_ASSIGN_OR_RETURN(auto exe, std::move(loaded));
  // Ranks load at their own pace (a shard of a large model takes minutes):
  // the first collective's wait starts only when every rank is ready.
  if (collective_view != nullptr)
    KERN_RETURN_IF_ERROR(collective_view->barrier(config.tp_load_timeout_ms), "tensor parallelism");
  std::unique_ptr<Model> m(new Model(std::move(exe), plan.contract, plan.spec, plan.batch, capacity));
  m->device_name_ = device_name;
  m->weights_metadata_ = std::move(weights_metadata);
  m->seeded_weights_ = config.random_weights_seed.has_value();
  const load::LoadTimings& t = phases.executable;
  phases.total_ms = phases.plan_ms + phases.device_ms + phases.weights_open_ms + t.kernels_ms + t.allocate_ms +
                    t.weights_ms + t.stage_ms + t.pack_ms;
  m->phases_ = phases;
  return m;
}

}  // namespace kern::engine
