// plan_memory_bytes: see plan_memory.h.
#include "common/plan_memory.h"

#include "common/expr.h"

namespace kern {
namespace {

/// a + b, or UINT64_MAX when it does not fit (a hostile plan's sizes can).
uint64_t saturating_add(uint64_t a, uint64_t b) { return checked_add(a, b).value_or(UINT64_MAX); }

}  // namespace

PlanMemoryBytes plan_memory_bytes(const plan::Plan& p, std::optional<uint64_t> capacity) {
  PlanMemoryBytes m;
  for (const auto* b : *p.buffers()) {
    switch (b->class_()) {
      case plan::BufferClass::weight: m.weights = saturating_add(m.weights, b->max_size_bytes()); break;
      case plan::BufferClass::workspace: m.workspace = saturating_add(m.workspace, b->max_size_bytes()); break;
      default: m.io = saturating_add(m.io, b->max_size_bytes()); break;
    }
  }
  for (const auto* s : *p.scratch()) m.scratch = saturating_add(m.scratch, s->max_size_bytes());
  bool states_fit = capacity.has_value();
  uint64_t states = 0;
  for (const auto* s : *p.states()) {
    m.state_bytes_per_token = saturating_add(m.state_bytes_per_token, s->bytes_per_token());
    m.state_bytes_fixed = saturating_add(m.state_bytes_fixed, s->bytes_fixed());
    if (!capacity) continue;
    auto per_token = checked_mul(s->bytes_per_token(), *capacity);
    auto size = per_token ? checked_add(*per_token, s->bytes_fixed()) : std::nullopt;
    auto sum = size ? checked_add(states, *size) : std::nullopt;
    if (!sum) states_fit = false;
    states = sum.value_or(0);
  }
  if (states_fit) m.states = states;
  if (const plan::Arena* a = p.arena()) {
    m.arena = a->size_bytes();
    m.arena_unplanned = a->unplanned_bytes();
    m.arena_peak_live = a->peak_live_bytes();
    m.arena_planned = a->planned();
  }
  if (m.states)
    m.total = saturating_add(saturating_add(m.weights, m.io), saturating_add(m.arena, *m.states));
  return m;
}

}  // namespace kern
