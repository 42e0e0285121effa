// kern-run's model opening and loading over the engine (load_model.h).
#include "kern-run/load_model.h"

#include <csignal>

#include "common/terminal_text.h"
#include "kern-load/device_select.h"
#include "kern-run/gpu_choice.h"
#include "kern-run/tp_ranks.h"
#include "spdlog/spdlog.h"

namespace kern::run {

Result<engine::ModelPlan> open_plan_for(const std::string& path, bool spec) {
  KERN_ASSIGN_OR_RETURN(auto opened, engine::open_model_plan(path));
  if (spec) {
    KERN_ASSIGN_OR_RETURN(opened.spec, engine::resolve_spec_contract(opened.plan, opened.contract), "--spec");
  }
  return opened;
}

Result<std::unique_ptr<engine::Model>> load_model(engine::ModelPlan plan, const LoadSettings& settings,
                                                  uint64_t capacity, ProgressLine* progress) {
  engine::ModelConfig config;
  KERN_ASSIGN_OR_RETURN(config.device, load::parse_device_choice(settings.device), "--device");
  config.weights_path = settings.weights_path;
  config.kernels_dir = settings.kernels_dir;
  config.capacity = capacity;
  config.graphs = !settings.eager;
  config.pdl = !settings.no_pdl;
  config.random_weights_seed = settings.random_weights_seed;
  config.poison_workspace = settings.poison_workspace;
  config.pack_gemv_weights = !settings.no_gemv_pack;
  // Tensor parallelism (docs/parallel.md): the folder's world must be --tp's
  // before any rank starts; rank 0 starts the others (tp_ranks.h).
  const uint32_t plan_world = plan.plan.plan().world();
  if (plan_world != settings.tp)
    return make_error(ErrorKind::kUsage, "--tp " + std::to_string(settings.tp) + " does not match " +
                                             plan.plan.path() + ", sharded for --tp " + std::to_string(plan_world));
  // The ranks' GPUs (gpu_choice.h), refused here, before any rank starts.
  KERN_ASSIGN_OR_RETURN(const std::vector<int> gpus, parse_gpus(settings.gpus, settings.tp));
  if (!gpus.empty() && config.device == load::DeviceChoice::kCpu)
    return make_error(ErrorKind::kUsage, "--gpus picks the cuda device's GPUs; this run has --device cpu");
  if (!settings.tp_rank && (settings.tp > 1 || !gpus.empty()) && config.device != load::DeviceChoice::kCpu) {
    const Result<int> visible = load::probe_cuda_devices();
    if (!visible.ok() && config.device == load::DeviceChoice::kCuda)
      return visible.error().with_context("--device cuda --tp " + std::to_string(settings.tp));
    if (visible.ok() && visible.value() > 0) KERN_RETURN_IF_ERROR(check_gpus(gpus, settings.tp, visible.value()));
  }
  config.cuda_ordinal = gpu_of_rank(gpus, settings.tp_rank.value_or(0));
  RankGroup* group = nullptr;
  if (settings.tp > 1) {
    // Gloo writes to its peers' sockets: a peer that died must fail the
    // collective naming it (and be seen by rank 0's watcher), not kill this
    // rank by SIGPIPE first.
    signal(SIGPIPE, SIG_IGN);
    load::GlooOptions tp;
    tp.world = settings.tp;
    tp.timeout_ms = kTpWaitTimeoutMs;
    if (settings.tp_rank) {
      tp.rank = *settings.tp_rank;
      tp.rendezvous_dir = settings.tp_rendezvous;
    } else {
      KERN_ASSIGN_OR_RETURN(group, RankGroup::start(settings.tp), "--tp");
      tp.rendezvous_dir = group->rendezvous_dir();
    }
    config.tp = tp;
  }
  engine::LoadObserver observer;
  // Warnings and notes name tensors from the weights file: terminal-safe.
  observer.on_warning = [](const std::string& w) { spdlog::warn("{}", terminal_safe(w, TerminalText::kMessage)); };
  observer.on_note = [](const std::string& n) {  // shown with --verbose
    spdlog::info("{}", terminal_safe(n, TerminalText::kMessage));
  };
  if (progress != nullptr)
    observer.on_weight_progress = [progress](uint64_t done, uint64_t total) {
      progress->update("weights upload", done >> 20, total >> 20, "MiB");
    };
  const std::string plan_path = plan.plan.path();
  auto loaded = engine::Model::load(std::move(plan), config, &observer);
  if (progress != nullptr) progress->clear();
  if (!loaded.ok() && settings.tp_rank)  // the ranks share stderr: say whose error it is
    return loaded.error().with_context("rank " + std::to_string(*settings.tp_rank));
  KERN_ASSIGN_OR_RETURN(auto model, std::move(loaded));
  if (group != nullptr) group->remove_rendezvous_dir();  // every rank joined (the plan check passed)
  spdlog::info("loaded {} on {}: {} B of device memory, capacity {} tokens", plan_path, model->device_name(),
               model->executable().memory().total_bytes, model->capacity());
  return model;
}

}  // namespace kern::run
