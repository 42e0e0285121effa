// Loading a Qwen3 plan for kern-run and its benchmark, timed by phase: open
// the plan (mmap, format check, verification, contract), select the device,
// open the weights, then Executable::load (kernels, allocation, weight
// upload, launch staging). Opening the plan is separate so callers can check
// their request against the contract before any device or weight work.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "kern-load/executable.h"
#include "kern-load/plan_file.h"
#include "kern-run/load_settings.h"
#include "kern-run/progress.h"
#include "kern-run/qwen3_contract.h"

namespace kern::run {

/// A plan with its resolved contract.
struct OpenedPlan {
  load::PlanFile plan;
  Qwen3Contract contract;
  double open_ms = 0;  ///< PlanFile::open + resolve_qwen3_contract wall time
};

/// Opens `path` and resolves the Qwen3 contract. Errors: PlanFile::open's
/// (kIo, kManifest), resolve_qwen3_contract's (kManifest).
Result<OpenedPlan> open_qwen3_plan(const std::string& path);

/// Wall times of the load phases in milliseconds (steady clock).
struct LoadPhases {
  double plan_ms = 0;          ///< open_qwen3_plan
  double device_ms = 0;        ///< select_device (driver probe, context)
  double weights_open_ms = 0;  ///< Safetensors::open (mmap + header)
  load::LoadTimings executable;  ///< kernels, allocate, weights upload, stage
  double total_ms = 0;         ///< all of the above
};

/// A model ready to generate.
struct LoadedModel {
  std::unique_ptr<load::Executable> exe;
  Qwen3Contract contract;
  std::string device_name;  ///< Device::name()
  LoadPhases phases;
};

/// Selects the device (a fallback note is logged as a warning), opens the
/// weights and loads `opened` at settings.capacity. Shows weight-upload
/// progress on `progress` (may be null). Errors: --device (kUsage), the
/// device's, the weights file's, Executable::load's.
Result<LoadedModel> load_qwen3_model(OpenedPlan opened, const LoadSettings& settings, ProgressLine* progress);

}  // namespace kern::run
