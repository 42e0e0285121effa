// check_arena, peak_live_bytes, plan_arena_regions, check_plan_arena: see arena_check.h.
#include "common/arena_check.h"

#include <algorithm>
#include <map>

namespace kern {
namespace {

uint64_t round_up(uint64_t v, uint64_t align) { return v % align == 0 ? v : v + (align - v % align); }

/// A region's live ranges sorted and merged, so that one region never
/// conflicts with itself.
std::vector<LiveRange> merged(std::vector<LiveRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const LiveRange& x, const LiveRange& y) { return x.begin < y.begin; });
  std::vector<LiveRange> out;
  for (const LiveRange& r : ranges) {
    if (r.begin >= r.end) continue;
    if (!out.empty() && r.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, r.end);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

/// A range boundary: at `time` region `region` starts or stops being live.
struct Event {
  uint64_t time = 0;
  bool start = false;
  size_t region = 0;
};

/// Every non-empty region's merged ranges as events, by time; at equal times
/// ends come first (ranges are half-open: [0, 3) and [3, 5) do not meet).
std::vector<Event> sorted_events(std::span<const ArenaRegion> regions) {
  std::vector<Event> events;
  for (size_t i = 0; i < regions.size(); ++i) {
    if (regions[i].size_bytes == 0) continue;
    for (const LiveRange& r : merged(regions[i].live)) {
      events.push_back({r.begin, true, i});
      events.push_back({r.end, false, i});
    }
  }
  std::sort(events.begin(), events.end(), [](const Event& x, const Event& y) {
    if (x.time != y.time) return x.time < y.time;
    if (x.start != y.start) return !x.start;
    return x.region < y.region;
  });
  return events;
}

}  // namespace

std::optional<ArenaConflict> check_arena(std::span<const ArenaRegion> regions, uint64_t arena_bytes,
                                         uint64_t align) {
  using Kind = ArenaConflict::Kind;
  for (size_t i = 0; i < regions.size(); ++i) {
    const ArenaRegion& r = regions[i];
    if (r.size_bytes == 0) continue;
    if (r.offset % align != 0) return ArenaConflict{Kind::kMisaligned, i, i, 0};
    if (r.offset > arena_bytes || r.size_bytes > arena_bytes - r.offset) return ArenaConflict{Kind::kOutOfBounds, i, i, 0};
  }
  // Sweep over time. `active` holds the byte ranges of the regions live now,
  // keyed by offset; they are pairwise disjoint (else we stopped), so a new
  // range can only intersect its neighbours in offset order.
  std::map<uint64_t, size_t> active;  // offset -> region
  for (const Event& e : sorted_events(regions)) {
    const ArenaRegion& r = regions[e.region];
    if (!e.start) {
      active.erase(r.offset);
      continue;
    }
    const uint64_t end = r.offset + r.size_bytes;  // fits: checked above
    auto next = active.lower_bound(r.offset);
    if (next != active.end() && next->first < end) return ArenaConflict{Kind::kOverlap, e.region, next->second, e.time};
    if (next != active.begin()) {
      auto prev = std::prev(next);
      const ArenaRegion& p = regions[prev->second];
      if (p.offset + p.size_bytes > r.offset) return ArenaConflict{Kind::kOverlap, e.region, prev->second, e.time};
    }
    active.emplace(r.offset, e.region);
  }
  return std::nullopt;
}

uint64_t peak_live_bytes(std::span<const ArenaRegion> regions, uint64_t align) {
  uint64_t live = 0;
  uint64_t peak = 0;
  for (const Event& e : sorted_events(regions)) {
    const uint64_t size = round_up(regions[e.region].size_bytes, align);
    if (e.start) {
      live += size;
      peak = std::max(peak, live);
    } else {
      live -= size;
    }
  }
  return peak;
}

std::vector<ArenaRegion> plan_arena_regions(const plan::Plan& p) {
  const uint32_t nbuf = p.buffers()->size();
  std::vector<ArenaRegion> regions(nbuf + p.scratch()->size());
  for (uint32_t i = 0; i < nbuf; ++i) {
    const auto* b = p.buffers()->Get(i);
    if (b->class_() != plan::BufferClass::workspace) continue;
    regions[i].offset = b->arena_offset();
    regions[i].size_bytes = b->max_size_bytes();
  }
  for (uint32_t i = 0; i < p.scratch()->size(); ++i) {
    const auto* s = p.scratch()->Get(i);
    regions[nbuf + i].offset = s->arena_offset();
    regions[nbuf + i].size_bytes = s->max_size_bytes();
  }
  uint64_t t = 0;  // global launch index
  for (const auto* prog : *p.programs()) {
    // A workspace buffer: one range per program, first to last launch naming it.
    std::vector<std::optional<LiveRange>> in_program(nbuf);
    // A scratch entry: one range per dispatch naming it (launches of a
    // dispatch are consecutive; the range closes when the dispatch changes).
    std::map<uint32_t, LiveRange> in_dispatch;  // scratch index -> range
    uint32_t dispatch = 0;
    auto close_dispatch = [&] {
      for (const auto& [s, r] : in_dispatch) regions[nbuf + s].live.push_back(r);
      in_dispatch.clear();
    };
    for (const auto* l : *prog->launches()) {
      if (l->dispatch() != dispatch) close_dispatch();
      dispatch = l->dispatch();
      for (const auto* a : *l->args()) {
        if (a->kind() == plan::ArgKind::buffer && regions[a->index()].size_bytes != 0) {
          auto& r = in_program[a->index()];
          if (!r) r = LiveRange{t, t + 1};
          r->end = t + 1;
        } else if (a->kind() == plan::ArgKind::scratch) {
          auto [it, inserted] = in_dispatch.try_emplace(a->index(), LiveRange{t, t + 1});
          it->second.end = t + 1;
        }
      }
      ++t;
    }
    close_dispatch();
    for (uint32_t i = 0; i < nbuf; ++i)
      if (in_program[i]) regions[i].live.push_back(*in_program[i]);
  }
  return regions;
}

std::optional<std::string> check_plan_arena(const plan::Plan& p) {
  const plan::Arena* arena = p.arena();
  if (arena == nullptr) return std::string("the plan has no workspace arena");
  const uint64_t align = arena->align();
  if (align < kArenaAlign || (align & (align - 1)) != 0)
    return "arena.align " + std::to_string(align) + " is not a power of two >= " + std::to_string(kArenaAlign);
  std::vector<ArenaRegion> regions = plan_arena_regions(p);
  auto conflict = check_arena(regions, arena->size_bytes(), align);
  if (!conflict) return std::nullopt;
  const uint32_t nbuf = p.buffers()->size();
  auto name = [&](size_t i) {
    return i < nbuf ? "buffer '" + p.buffers()->Get(static_cast<uint32_t>(i))->name()->str() + "'"
                    : "scratch '" + p.scratch()->Get(static_cast<uint32_t>(i - nbuf))->name()->str() + "'";
  };
  auto describe = [&](size_t i) {  // offset + size fits u64: checked before overlaps
    const ArenaRegion& r = regions[i];
    return name(i) + " [" + std::to_string(r.offset) + ", " + std::to_string(r.offset + r.size_bytes) + ")";
  };
  const ArenaRegion& a = regions[conflict->a];
  switch (conflict->kind) {
    case ArenaConflict::Kind::kMisaligned:
      return "workspace arena: " + name(conflict->a) + " at offset " + std::to_string(a.offset) +
             " is not aligned to " + std::to_string(align) + " B";
    case ArenaConflict::Kind::kOutOfBounds:
      return "workspace arena: " + name(conflict->a) + " (" + std::to_string(a.size_bytes) + " B at offset " +
             std::to_string(a.offset) + ") does not fit the arena of " + std::to_string(arena->size_bytes()) + " B";
    case ArenaConflict::Kind::kOverlap: break;
  }
  // Map the global launch index back to (program, launch).
  uint64_t t = conflict->time;
  std::string where;
  for (const auto* prog : *p.programs()) {
    if (t < prog->launches()->size()) {
      where = "program '" + prog->name()->str() + "' launch " + std::to_string(t);
      break;
    }
    t -= prog->launches()->size();
  }
  return "workspace arena: " + describe(conflict->a) + " and " + describe(conflict->b) + " are both live at " + where;
}

}  // namespace kern
