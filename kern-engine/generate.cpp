// The blocking generation call over the engine (generate.h).
#include "kern-engine/generate.h"

namespace kern::engine {

Result<SequenceResult> generate(Engine& engine, Request r, GenerateObserver* observer) {
  if (!engine.idle()) return make_error(ErrorKind::kUsage, "generate needs an idle engine");
  const RequestId id = r.id;
  KERN_RETURN_IF_ERROR(engine.add_request(std::move(r)));
  Status observer_error;
  while (true) {
    KERN_ASSIGN_OR_RETURN(auto events, engine.step());
    for (const TokenEvent& ev : events) {
      if (ev.id != id) continue;
      if (observer != nullptr && observer_error.ok()) {
        if (ev.prefilled) observer->on_prefill_progress(*ev.prefilled, ev.prefill_total);
        for (int64_t t : ev.ids) observer->on_token(t);
        observer_error = observer->status();
        // The output cannot be written: stop generating (the next step
        // drains what is queued and reports the abort).
        if (!observer_error.ok() && !ev.finished) engine.abort(id);
      }
      if (!ev.finished) continue;
      if (ev.error) return join(*ev.error, observer_error).error();
      if (!observer_error.ok()) return observer_error.error();
      if (!ev.result) return make_error(ErrorKind::kUsage, "request " + std::to_string(id) + " was aborted");
      return *ev.result;
    }
  }
}

}  // namespace kern::engine
