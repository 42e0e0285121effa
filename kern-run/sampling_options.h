// The sampling parameters of kern-run's --temperature, --top-k, --top-p,
// --min-p and --seed (docs/running.md "Sampling"), shared by the single
// run and --chat --interactive, and the seed a sampled request without one
// gets.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "kern-engine/request.h"
#include "kern-run/cli_options.h"

namespace kern::run {

/// A fresh seed from std::random_device (64 bits: two draws).
uint64_t random_seed();

/// The options' sampling parameters, checked (engine::check_sampling;
/// errors (kUsage) get "--temperature/--top-p/--min-p" as context). A
/// sampled run (temperature > 0) without --seed gets random_seed(),
/// reported on stderr ("kern-run: sampling with seed S (pass --seed S to
/// repeat)") so that it can be repeated; a greedy one keeps seed 0 (unused).
Result<engine::SamplingParams> sampling_from_options(const RunOptions& o);

}  // namespace kern::run
