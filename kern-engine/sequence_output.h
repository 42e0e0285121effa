// What a sequence has produced, from admission to its last event, and the
// one rule for taking a generated id (timing, stop id, max_tokens): shared
// by the batch-1 Engine (engine.cpp) and the batched mode (batch_engine.cpp).
#pragma once

#include <cstdint>

#include "kern-engine/clock.h"
#include "kern-engine/engine.h"
#include "kern-engine/request.h"

namespace kern::engine {

/// A sequence's output so far. t0: its admission (the start of its prefill
/// time); t_first / t_last: when its first / latest id was taken.
struct SequenceOutput {
  SequenceResult out;
  Clock::time_point t0, t_first, t_last;
  bool done = false;  ///< a stop id or max_tokens ids

  /// Takes generated id `id` of request `req` at `now`: appends it to the
  /// result and to `ev`, sets prefill_ms (admission to the first id) and
  /// t_first on the first id, `stopped` when `id` is one of req.stop_ids,
  /// and `done` on a stop id or req.max_tokens ids. Returns whether it was
  /// the sequence's first id.
  bool take_id(const Request& req, int64_t id, Clock::time_point now, TokenEvent& ev);
};

}  // namespace kern::engine
