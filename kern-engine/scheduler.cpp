// The batched engine's scheduler (scheduler.h).
#include "kern-engine/scheduler.h"

namespace kern::engine {

SchedulerOutput schedule(const SchedulerInput& in) {
  SchedulerOutput out;
  uint64_t slots = in.max_batch > in.admitted ? in.max_batch - in.admitted : 0;
  uint32_t pages = in.free_pages;
  for (const WaitingEntry& w : in.waiting) {
    if (slots == 0 || w.pages > pages) break;  // FIFO: the head waits, nothing overtakes it
    out.admit.push_back(w.serial);
    out.pages += w.pages;
    pages -= w.pages;
    --slots;
  }
  return out;
}

}  // namespace kern::engine
