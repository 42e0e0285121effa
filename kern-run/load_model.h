// How kern-run's commands (run, bench) open and load a model on the engine
// (kern-engine/model.h): the plan with its contracts (a speculative one
// with --spec), then the load with a progress line on stderr and load notes
// and warnings in the log. Written once for both commands.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "kern-engine/model.h"
#include "kern-run/load_settings.h"
#include "kern-run/progress.h"

namespace kern::run {

/// open_model_plan(path), and with `spec` the speculative contract (errors
/// get "--spec" as context).
Result<engine::ModelPlan> open_plan_for(const std::string& path, bool spec);

/// Loads `plan` at `capacity` tokens as `settings` say (--device, --weights
/// or --random-weights, --kernels, --eager, --poison-workspace). Shows the
/// weight upload on `progress` (may be null; cleared afterwards); a device
/// fallback note and load warnings are logged as warnings, notes at info
/// (shown with --verbose). Errors: --device (kUsage), Model::load's.
Result<std::unique_ptr<engine::Model>> load_model(engine::ModelPlan plan, const LoadSettings& settings,
                                                  uint64_t capacity, ProgressLine* progress);

}  // namespace kern::run
