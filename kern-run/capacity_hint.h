// The next step for a request over the KV capacity (issue 25): the engine's
// check_request names the prompt, the steps and the capacity without CLI
// flag names (docs/engine.md); kern-run, which owns --capacity and --steps,
// says which to change and how far this plan allows.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "kern-engine/causal_lm_contract.h"

namespace kern::run {

/// For `e`, check_request's error for a request of `prompt_tokens` +
/// `steps` at `capacity` on a plan of contract `c`: when the two exceed the
/// capacity, `e` with the next step appended — "; raise --capacity (this
/// plan holds up to M tokens) or lower --steps" when they fit the plan's
/// largest capacity M (CausalLmContract::max_capacity), "; this plan holds at
/// most M tokens: lower --steps to at most M - prompt" when only the prompt
/// does, "; this plan holds at most M tokens: shorten the prompt" when it
/// does not. Any other error: `e` unchanged.
Error with_capacity_next_step(Error e, const engine::CausalLmContract& c, uint64_t capacity, uint64_t prompt_tokens,
                              uint64_t steps);

}  // namespace kern::run
