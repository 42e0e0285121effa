// Per-step figures of the engine's decode loop (docs/runtime.md, "Asynchronous
// decode"): what each decode step cost the host and the device, and their
// steady-state averages. Plain data: filled by the ModelRunner (model_runner.h),
// printed by the run report and the benchmark.
#pragma once

#include <cstdint>
#include <span>

namespace kern::engine {

/// Decode steps excluded from the steady state: the first run of the decode
/// program (eager, warms cublasLt) and the second (captured into a graph).
inline constexpr uint64_t kDecodeWarmupSteps = 2;

/// Decode steps excluded from the steady state at the end of a sequence: the
/// host waits for the last token with nothing queued behind it (the drain).
inline constexpr uint64_t kDecodeDrainSteps = 1;

/// What one decode step cost the host and the device.
struct DecodeStepRecord {
  uint64_t launches = 0;     ///< device launches issued for the step
  uint64_t host_writes = 0;  ///< host -> device input writes issued for the step
  uint64_t host_waits = 0;   ///< blocking waits that left the device without queued work
  /// GPU timestamps (devices with timers only, else negative): the step's
  /// program from its first to its last launch, and the device's idle time
  /// between the previous step's end and this step's start (the host gap,
  /// including any copies issued between the two).
  double gpu_busy_ms = -1;
  double gpu_gap_ms = -1;
};

/// Steady-state figures per decode step: the averages over steady_part's
/// records (docs/runtime.md, "Asynchronous decode").
struct DecodeStats {
  uint64_t steady_steps = 0;  ///< records averaged (0: too few steps; every figure is 0)
  double launches_per_step = 0;
  double host_writes_per_step = 0;
  double host_waits_per_step = 0;
  /// Whether the device had timers (cuda); the GPU figures are 0 otherwise.
  bool gpu_timed = false;
  double gpu_busy_ms_per_step = 0;  ///< the decode program, first launch to last
  double gpu_wall_ms_per_step = 0;  ///< step end to step end on the GPU's clock (busy + gap)
  double host_gap_us_per_step = 0;  ///< mean device idle time between consecutive steps
  double host_gap_us_max = 0;       ///< the largest of those gaps
};

/// The steady-state records of one sequence's decode steps: without the
/// first kDecodeWarmupSteps and the last kDecodeDrainSteps (empty when
/// there are no more than those).
std::span<const DecodeStepRecord> steady_part(std::span<const DecodeStepRecord> sequence);

/// Averages steady-state records (one sequence's steady_part, or several
/// concatenated); steady_steps = their number.
DecodeStats average_decode(std::span<const DecodeStepRecord> steady);

}  // namespace kern::engine
