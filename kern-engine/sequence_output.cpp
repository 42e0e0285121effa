// Taking a generated id (sequence_output.h).
#include "kern-engine/sequence_output.h"

namespace kern::engine {

bool SequenceOutput::take_id(const Request& req, int64_t id, Clock::time_point now, TokenEvent& ev) {
  t_last = now;
  out.generated_ids.push_back(id);
  ev.ids.push_back(id);
  const bool first = out.generated_ids.size() == 1;
  if (first) {
    out.prefill_ms = ms_between(t0, t_last);
    t_first = t_last;
  }
  out.stopped = is_stop_id(req.stop_ids, id);
  done = out.stopped || out.generated_ids.size() >= req.max_tokens;
  return first;
}

}  // namespace kern::engine
