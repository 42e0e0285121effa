// Steps an engine until it is idle and collects each request's events: the
// loop the batched engine's and the prefix cache's tests share.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kern-engine/engine.h"

namespace kern::test {

/// What one request ended with, from its events.
struct Outcome {
  std::vector<int64_t> ids;  ///< every id of its events, in order
  engine::FinishReason reason = engine::FinishReason::kError;
  std::string error;           ///< the failed event's message, else empty
  uint64_t cached_tokens = 0;  ///< from its result (the prefix cache's hits)
};

/// Steps `e` until idle (at most `max_steps` steps; REQUIREs idle then),
/// calling `before(step)` before each step to add or abort requests; while
/// `more()` says requests are still to come, an idle engine steps on.
inline std::map<engine::RequestId, Outcome> run_until_idle(engine::Engine& e,
                                                           const std::function<void(int)>& before = {},
                                                           const std::function<bool()>& more = {},
                                                           int max_steps = 5000) {
  std::map<engine::RequestId, Outcome> out;
  for (int k = 0; k < max_steps; ++k) {
    if (before) before(k);
    if (e.idle() && k > 0 && !(more && more())) break;
    auto events = e.step();
    REQUIRE(events.ok());
    for (const engine::TokenEvent& ev : events.value()) {
      Outcome& o = out[ev.id];
      o.ids.insert(o.ids.end(), ev.ids.begin(), ev.ids.end());
      if (ev.finished) o.reason = *ev.finished;
      if (ev.error) o.error = ev.error->message;
      if (ev.result) o.cached_tokens = ev.result->cached_tokens;
    }
  }
  REQUIRE(e.idle());
  return out;
}

/// The ids `r` generates alone, through a fresh engine on `m` with its
/// default options (batch 1, the prefix cache off: `decode`); CHECKs that
/// it ended without an error.
inline std::vector<int64_t> solo_ids(engine::Model& m, const engine::Request& r) {
  engine::Engine e(m);
  REQUIRE(e.add_request(r).ok());
  auto out = run_until_idle(e);
  CHECK(out[r.id].error.empty());
  return out[r.id].ids;
}

}  // namespace kern::test
