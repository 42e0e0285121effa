// Loading a Qwen3 plan for kern-run and its benchmark, timed by phase (model_load.h).
#include "kern-run/model_load.h"
#include "kern-run/stopwatch.h"

#include <chrono>
#include <filesystem>

#include "kern-load/device_select.h"
#include "kern-load/safetensors.h"
#include "spdlog/spdlog.h"

namespace kern::run {
Result<OpenedPlan> open_qwen3_plan(const std::string& path) {
  auto t0 = Clock::now();
  KERN_ASSIGN_OR_RETURN(auto plan, load::PlanFile::open(path));
  KERN_ASSIGN_OR_RETURN(auto contract, resolve_qwen3_contract(plan));
  return OpenedPlan{std::move(plan), contract, ms_since(t0)};
}

Result<LoadedModel> load_qwen3_model(OpenedPlan opened, const LoadSettings& settings, ProgressLine* progress) {
  LoadedModel m;
  m.contract = opened.contract;
  m.phases.plan_ms = opened.open_ms;
  KERN_ASSIGN_OR_RETURN(auto choice, load::parse_device_choice(settings.device), "--device");
  auto t0 = Clock::now();
  std::string note;
  load::CudaDeviceOptions cuda_options;
  cuda_options.pdl = !settings.no_pdl;
  KERN_ASSIGN_OR_RETURN(auto device, load::select_device(choice, &note, cuda_options));
  if (!note.empty()) spdlog::warn("{}", note);
  m.device_name = device->name();
  m.phases.device_ms = ms_since(t0);
  t0 = Clock::now();
  std::optional<load::Safetensors> weights;  // none with --random-weights
  if (!settings.random_weights_seed) {
    KERN_ASSIGN_OR_RETURN(auto opened_weights, load::Safetensors::open(settings.weights_path));
    weights = std::move(opened_weights);
  }
  m.phases.weights_open_ms = ms_since(t0);

  load::ExecutableOptions eo;
  // The KV cache is paged (kKvBlockTokens per page): a capacity inside a page
  // still addresses the whole page, so the state holds whole pages; the
  // request's token limit stays the capacity the user gave.
  eo.capacity_tokens = (settings.capacity + kKvBlockTokens - 1) / kKvBlockTokens * kKvBlockTokens;
  eo.graphs = !settings.eager;
  eo.random_weights_seed = settings.random_weights_seed;
  std::string plan_path = opened.plan.path();
  std::filesystem::path kernels_dir = settings.kernels_dir.empty() ? std::filesystem::path(plan_path).parent_path()
                                                                   : std::filesystem::path(settings.kernels_dir);
  eo.kernels_dir = kernels_dir.empty() ? std::filesystem::current_path().string() : kernels_dir.string();
  load::LoadMonitor monitor;
  monitor.timings = &m.phases.executable;
  monitor.on_warning = [](const std::string& w) { spdlog::warn("{}", w); };
  monitor.on_note = [](const std::string& n) { spdlog::info("{}", n); };  // shown with --verbose
  if (progress != nullptr)
    monitor.on_weight_progress = [progress](uint64_t done, uint64_t total) {
      progress->update("weights upload", done >> 20, total >> 20, "MiB");
    };
  eo.poison_workspace = settings.poison_workspace;
  // The Executable keeps the weights file mapped: the cpu device reads the
  // weights in place from it (no copy).
  auto loaded =
      weights
          ? load::Executable::load(std::move(opened.plan), std::move(device), std::move(*weights), eo, &monitor)
          : load::Executable::load(std::move(opened.plan), std::move(device), nullptr, eo, &monitor);
  if (progress != nullptr) progress->clear();
  KERN_ASSIGN_OR_RETURN(m.exe, std::move(loaded));
  const load::LoadTimings& t = m.phases.executable;
  m.phases.total_ms = m.phases.plan_ms + m.phases.device_ms + m.phases.weights_open_ms + t.kernels_ms +
                      t.allocate_ms + t.weights_ms + t.stage_ms;
  spdlog::info("loaded {} on {}: {} B of device memory, capacity {} tokens", plan_path, m.device_name,
               m.exe->memory().total_bytes, settings.capacity);
  return m;
}

}  // namespace kern::run
