// plan_memory: the regions and allocation sizes of a plan (memory_plan.h).
#include "kern-load/memory_plan.h"

#include <algorithm>
#include <string>

#include "common/expr.h"

namespace kern::load {

Result<MemoryPlan> plan_memory(const plan::Plan& p, uint64_t capacity_tokens) {
  MemoryPlan m;
  // validate_plan proved the arena: offsets aligned, regions inside it.
  m.arena = {p.arena()->size_bytes(), std::max<uint64_t>(kMinAllocAlign, p.arena()->align())};
  for (const auto* b : *p.buffers()) {
    Region r{b->max_size_bytes(), kMinAllocAlign};
    if (b->class_() == plan::BufferClass::workspace) r.arena_offset = b->arena_offset();
    m.buffers.push_back(r);
  }
  for (const auto* s : *p.scratch()) m.scratch.push_back({s->max_size_bytes(), kMinAllocAlign, s->arena_offset()});
  for (const auto* s : *p.states()) {
    auto per_token = checked_mul(s->bytes_per_token(), capacity_tokens);
    auto size = per_token ? checked_add(*per_token, s->bytes_fixed()) : std::nullopt;
    if (!size)
      return make_error(ErrorKind::kUsage, "state '" + s->name()->str() + "': " + std::to_string(s->bytes_per_token()) +
                                               " B/token x capacity " + std::to_string(capacity_tokens) +
                                               " tokens overflows u64");
    m.states.push_back({*size, std::max<uint64_t>(kMinAllocAlign, s->align())});
  }
  // A state view must start inside the state at this capacity (the verifier
  // cannot know the capacity; plan validation checked the index).
  for (const auto* prog : *p.programs()) {
    for (flatbuffers::uoffset_t j = 0; j < prog->launches()->size(); ++j) {
      const auto* l = prog->launches()->Get(j);
      for (flatbuffers::uoffset_t k = 0; k < l->args()->size(); ++k) {
        const auto* a = l->args()->Get(k);
        if (a->kind() != plan::ArgKind::state) continue;
        const Region& r = m.states[a->index()];
        if (a->offset() >= r.size_bytes)
          return make_error(ErrorKind::kManifest,
                            "programs '" + prog->name()->str() + "'.launches[" + std::to_string(j) + "].args[" +
                                std::to_string(k) + "]: offset " + std::to_string(a->offset()) + " B is beyond state '" +
                                p.states()->Get(a->index())->name()->str() + "' (" + std::to_string(r.size_bytes) +
                                " B at capacity " + std::to_string(capacity_tokens) + " tokens)");
      }
    }
  }
  // Sizes come from the plan (hostile plans can carry any u64): every step
  // of the sum is checked.
  auto add = [&](const Region& r) {
    auto rounded = checked_round_up(r.size_bytes, r.align_bytes);
    auto sum = rounded ? checked_add(m.total_bytes, *rounded) : std::nullopt;
    if (sum) m.total_bytes = *sum;
    return sum.has_value();
  };
  bool fits = add(m.arena);
  for (const auto* regions : {&m.buffers, &m.states})
    for (const Region& r : *regions)
      if (!r.arena_offset) fits = fits && add(r);
  if (!fits)
    return make_error(ErrorKind::kManifest, "memory plan: the allocations' total at capacity " +
                                                std::to_string(capacity_tokens) + " tokens overflows u64");
  m.bytes = plan_memory_bytes(p, capacity_tokens);
  return m;
}

}  // namespace kern::load
