// greedy_by_size_offsets, manifest_arena_regions, plan_arena: see memory_planner.h.
#include "kern-verify/memory_planner.h"

#include <algorithm>
#include <numeric>
#include <optional>

namespace kern::verify {
namespace {

uint64_t round_up(uint64_t v, uint64_t align) { return (v + align - 1) / align * align; }

/// `ranges` sorted by begin with touching or overlapping ranges merged.
std::vector<LiveRange> normalized(std::vector<LiveRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const LiveRange& x, const LiveRange& y) { return x.begin < y.begin; });
  std::vector<LiveRange> out;
  for (const LiveRange& r : ranges) {
    if (!out.empty() && r.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, r.end);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

/// Whether two normalized range lists share a launch (a merge walk).
bool intersect(const std::vector<LiveRange>& x, const std::vector<LiveRange>& y) {
  size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    if (x[i].begin < y[j].end && y[j].begin < x[i].end) return true;
    if (x[i].end <= y[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

}  // namespace

std::vector<uint64_t> greedy_by_size_offsets(std::span<const ArenaRegion> regions, uint64_t align,
                                             uint64_t* arena_bytes) {
  std::vector<uint64_t> offsets(regions.size(), 0);
  std::vector<std::vector<LiveRange>> live(regions.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < regions.size(); ++i) {
    live[i] = normalized(regions[i].live);
    if (regions[i].size_bytes != 0 && !live[i].empty()) order.push_back(i);
  }
  // A region never live shares bytes with everything; it still has to fit.
  uint64_t top = 0;
  for (size_t i = 0; i < regions.size(); ++i)
    if (live[i].empty()) top = std::max(top, round_up(regions[i].size_bytes, align));
  auto first_use = [&](size_t i) { return live[i].front().begin; };
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const uint64_t sx = round_up(regions[x].size_bytes, align), sy = round_up(regions[y].size_bytes, align);
    if (sx != sy) return sx > sy;
    return first_use(x) < first_use(y);
  });
  std::vector<size_t> placed;
  for (size_t r : order) {
    const uint64_t size = round_up(regions[r].size_bytes, align);
    // Placed regions live at some launch where r is: r must avoid their bytes.
    std::vector<size_t> rivals;
    for (size_t q : placed)
      if (intersect(live[q], live[r])) rivals.push_back(q);
    std::sort(rivals.begin(), rivals.end(), [&](size_t x, size_t y) { return offsets[x] < offsets[y]; });
    std::optional<uint64_t> best;
    uint64_t best_gap = 0;
    uint64_t prev_end = 0;
    for (size_t q : rivals) {
      if (offsets[q] > prev_end) {
        const uint64_t gap = offsets[q] - prev_end;
        if (gap >= size && (!best || gap < best_gap)) {
          best = prev_end;
          best_gap = gap;
        }
      }
      prev_end = std::max(prev_end, offsets[q] + round_up(regions[q].size_bytes, align));
    }
    offsets[r] = best.value_or(prev_end);
    top = std::max(top, offsets[r] + size);
    placed.push_back(r);
  }
  *arena_bytes = top;
  return offsets;
}

std::vector<ArenaRegion> manifest_arena_regions(const VerifiedManifest& v) {
  const Manifest& m = v.manifest();
  const size_t nbuf = m.buffers.size();
  std::vector<ArenaRegion> regions(nbuf + v.scratch_count());
  for (size_t b = 0; b < nbuf; ++b)
    if (m.buffers[b].cls == BufferClass::kWorkspace) regions[b].size_bytes = v.buffer_max_size_bytes(static_cast<uint32_t>(b));
  for (uint32_t s = 0; s < v.scratch_count(); ++s) regions[nbuf + s].size_bytes = v.scratch_max_size_bytes(s);
  uint64_t t = 0;  // launches of every earlier dispatch, programs concatenated
  for (const Program& prog : m.programs) {
    std::vector<std::optional<LiveRange>> in_program(nbuf);
    for (const Dispatch& d : prog.dispatches) {
      const uint32_t k = v.kernel_index(d.kernel);
      const Kernel& kernel = m.kernels[k];
      const LiveRange here{t, t + kernel.steps.size()};
      for (const Arg& a : d.args) {
        if (a.kind != Arg::Kind::kBuf) continue;
        const uint32_t b = v.buffer_index(a.name);
        if (m.buffers[b].cls != BufferClass::kWorkspace) continue;
        auto& r = in_program[b];
        if (!r) r = here;
        r->end = here.end;
      }
      for (uint32_t s = 0; s < kernel.scratch.size(); ++s) regions[nbuf + v.scratch_index(k, s)].live.push_back(here);
      t = here.end;
    }
    for (size_t b = 0; b < nbuf; ++b)
      if (in_program[b]) regions[b].live.push_back(*in_program[b]);
  }
  return regions;
}

PlannedArena plan_arena(const VerifiedManifest& v, bool planned) {
  std::vector<ArenaRegion> regions = manifest_arena_regions(v);
  PlannedArena out;
  out.planned = planned;
  std::vector<uint64_t> offsets(regions.size(), 0);
  for (size_t i = 0; i < regions.size(); ++i) {
    offsets[i] = out.unplanned_bytes;
    out.unplanned_bytes += round_up(regions[i].size_bytes, kArenaAlign);
  }
  if (planned) {
    offsets = greedy_by_size_offsets(regions, kArenaAlign, &out.size_bytes);
  } else {
    out.size_bytes = out.unplanned_bytes;
  }
  out.peak_live_bytes = peak_live_bytes(regions, kArenaAlign);
  const size_t nbuf = v.manifest().buffers.size();
  out.buffer_offsets.assign(offsets.begin(), offsets.begin() + static_cast<std::ptrdiff_t>(nbuf));
  out.scratch_offsets.assign(offsets.begin() + static_cast<std::ptrdiff_t>(nbuf), offsets.end());
  // Regions of size 0 or never used occupy nothing; give them offset 0 in
  // the unplanned layout too, so both layouts agree on them.
  for (size_t i = 0; i < regions.size(); ++i)
    if (regions[i].size_bytes == 0) (i < nbuf ? out.buffer_offsets[i] : out.scratch_offsets[i - nbuf]) = 0;
  return out;
}

}  // namespace kern::verify
