// The next step for a request over the KV capacity (capacity_hint.h).
#include "kern-run/capacity_hint.h"

#include <string>

namespace kern::run {

Error with_capacity_next_step(Error e, const engine::CausalLmContract& c, uint64_t capacity, uint64_t prompt_tokens,
                              uint64_t steps) {
  const bool over = steps > capacity || prompt_tokens > capacity - steps;
  if (!over || e.kind != ErrorKind::kUsage || e.message.find("exceeds the capacity") == std::string::npos) return e;
  const uint64_t max = c.max_capacity();
  const std::string holds = "this plan holds at most " + std::to_string(max) + " tokens";
  if (steps <= max && prompt_tokens <= max - steps) {
    e.message += "; raise --capacity (this plan holds up to " + std::to_string(max) + " tokens) or lower --steps";
  } else if (prompt_tokens < max) {
    e.message += "; " + holds + ": lower --steps to at most " + std::to_string(max - prompt_tokens);
  } else {
    e.message += "; " + holds + ": shorten the prompt";
  }
  return e;
}

}  // namespace kern::run
