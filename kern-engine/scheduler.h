// The batched engine's scheduler (docs/batching.md): a pure function of the
// running sequences, the waiting queue and the free pages, so it is
// unit-tested without a device (like vLLM's scheduler). Admission is FIFO
// and reserves a sequence's whole KV need (prompt + max_tokens) up front,
// so nothing is ever preempted: the head of the queue waits while its pages
// or a batch slot are not free, and nothing behind it overtakes it (no
// starvation of long prompts).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kern::engine {

/// A waiting request as the scheduler sees it.
struct WaitingEntry {
  uint64_t serial = 0;  ///< the engine's handle of the request
  uint32_t pages = 0;   ///< pages its prompt + max_tokens need (pages_for_tokens)
};

/// What the engine has now.
struct SchedulerInput {
  uint64_t max_batch = 1;  ///< sequences admitted at once at most (running + prefilling)
  uint64_t admitted = 0;   ///< sequences admitted and not yet finished
  uint32_t free_pages = 0;
  std::span<const WaitingEntry> waiting;  ///< in arrival order
};

/// What to do in this step.
struct SchedulerOutput {
  std::vector<uint64_t> admit;  ///< serials to admit now, in order (a prefix of the queue)
  uint32_t pages = 0;           ///< pages they take together
};

/// Admits the longest prefix of the queue that fits the free batch slots
/// and pages. Pure: no allocation besides the result.
SchedulerOutput schedule(const SchedulerInput& in);

}  // namespace kern::engine
