// The static memory planner (kern-verify/memory_planner.h) against the
// independent checker (common/arena_check.h): a worked greedy-by-size
// example, a property test on randomized synthetic programs (every layout the
// planner produces is sound, between the live peak and the unplanned size,
// and a corrupted one is caught), and every example manifest lowered with and
// without planning.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <random>

#include "common/arena_check.h"
#include "common/file_util.h"
#include "common/manifest_reader.h"
#include "common/plan_format.h"
#include "fixture.h"
#include "kern-verify/lower.h"
#include "kern-verify/memory_planner.h"

using namespace kern;
using kern::verify::greedy_by_size_offsets;

namespace {

uint64_t aligned(uint64_t v) { return (v + 255) / 256 * 256; }

uint64_t unplanned(const std::vector<ArenaRegion>& r) {
  uint64_t sum = 0;
  for (const auto& x : r) sum += aligned(x.size_bytes);
  return sum;
}

std::vector<ArenaRegion> placed(std::vector<ArenaRegion> r, const std::vector<uint64_t>& offsets) {
  for (size_t i = 0; i < r.size(); ++i) r[i].offset = offsets[i];
  return r;
}

bool meet(const ArenaRegion& x, const ArenaRegion& y) {
  for (const auto& a : x.live)
    for (const auto& b : y.live)
      if (a.begin < b.end && b.begin < a.end) return true;
  return false;
}

/// A random synthetic plan's regions: `programs` programs of random length,
/// each dispatch naming a few random buffers (a buffer lives from its first
/// to its last dispatch in each program, like a workspace) and, sometimes,
/// a kernel's scratch (live only during that dispatch, like scratch).
std::vector<ArenaRegion> synthetic(std::mt19937_64& rng) {
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  const size_t buffers = pick(1, 24), scratches = pick(0, 6);
  std::vector<ArenaRegion> r(buffers + scratches);
  for (auto& x : r) {
    // Sizes: empty, tiny, unaligned, up to 4 MiB.
    switch (pick(0, 3)) {
      case 0: x.size_bytes = pick(0, 300); break;
      case 1: x.size_bytes = pick(1, 64) * 256; break;
      default: x.size_bytes = pick(1, 4u << 20); break;
    }
  }
  uint64_t t = 0;
  for (uint64_t p = pick(1, 3); p > 0; --p) {
    std::vector<std::optional<LiveRange>> in_program(buffers);
    for (uint64_t d = pick(1, 40); d > 0; --d) {
      const uint64_t launches = pick(1, 3);
      for (uint64_t k = pick(1, 4); k > 0; --k) {
        auto& range = in_program[pick(0, buffers - 1)];
        if (!range) range = LiveRange{t, t + launches};
        range->end = t + launches;
      }
      if (scratches > 0 && pick(0, 2) == 0) r[buffers + pick(0, scratches - 1)].live.push_back({t, t + launches});
      t += launches;
    }
    for (size_t b = 0; b < buffers; ++b)
      if (in_program[b]) r[b].live.push_back(*in_program[b]);
  }
  return r;
}

}  // namespace

TEST_CASE("greedy by size places the largest first, each in the lowest gap free of its live rivals", "[planner]") {
  // a 1024 B live [0, 2), b 512 B [1, 3), c 512 B [2, 4), d 1024 B [3, 5).
  std::vector<ArenaRegion> r = {{0, 1024, {{0, 2}}}, {0, 512, {{1, 3}}}, {0, 512, {{2, 4}}}, {0, 1024, {{3, 5}}}};
  uint64_t arena = 0;
  auto offsets = greedy_by_size_offsets(r, 256, &arena);
  // a at 0; d (same size, used later) also at 0 (never live with a); b is
  // live with a: after it; c is live with b and d: after b.
  CHECK(offsets == std::vector<uint64_t>{0, 1024, 1536, 0});
  CHECK(arena == 2048);
  CHECK_FALSE(check_arena(placed(r, offsets), arena, 256).has_value());
  CHECK(unplanned(r) == 3072);
}

TEST_CASE("greedy by size takes the smallest gap that fits", "[planner]") {
  // p, q, r 1024 B and s, t 512 B are stacked in that order (all live at
  // launch 0); q and s die after launch 0. u (256 B, live [2, 3)) then sees
  // p, r and t with holes [1024, 2048) (1024 B) and [3072, 3584) (512 B):
  // best fit takes the smaller hole, 3072 (first fit would take 1024).
  std::vector<ArenaRegion> r = {{0, 1024, {{0, 4}}}, {0, 1024, {{0, 1}}}, {0, 1024, {{0, 4}}},
                                {0, 512, {{0, 1}}},  {0, 512, {{0, 4}}},  {0, 256, {{2, 3}}}};
  uint64_t arena = 0;
  auto offsets = greedy_by_size_offsets(r, 256, &arena);
  CHECK(offsets == std::vector<uint64_t>{0, 1024, 2048, 3072, 3584, 3072});
  CHECK(arena == 4096);
  CHECK_FALSE(check_arena(placed(r, offsets), arena, 256).has_value());
}

TEST_CASE("property: every planned layout of a random synthetic program is sound and at least as small", "[planner]") {
  std::mt19937_64 rng(20261201);
  size_t corrupted = 0;
  for (int iteration = 0; iteration < 400; ++iteration) {
    std::vector<ArenaRegion> r = synthetic(rng);
    uint64_t arena = 0;
    auto offsets = greedy_by_size_offsets(r, 256, &arena);
    auto layout = placed(r, offsets);
    INFO("iteration " << iteration << ", " << r.size() << " regions");
    auto conflict = check_arena(layout, arena, 256);
    REQUIRE_FALSE(conflict.has_value());
    CHECK(arena >= peak_live_bytes(layout, 256));
    CHECK(arena <= unplanned(r));
    // The checker must catch a corruption: move one region onto another it
    // is live with.
    for (size_t i = 0; i < layout.size(); ++i) {
      for (size_t j = i + 1; j < layout.size(); ++j) {
        if (layout[i].size_bytes == 0 || layout[j].size_bytes == 0 || !meet(layout[i], layout[j])) continue;
        auto bad = layout;
        bad[j].offset = bad[i].offset;
        CHECK(check_arena(bad, std::max(arena, bad[j].offset + aligned(bad[j].size_bytes)), 256).has_value());
        ++corrupted;
        i = j = layout.size();  // one corruption per iteration
      }
    }
  }
  CHECK(corrupted > 300);  // the generator does produce live pairs
}

TEST_CASE("every example manifest lowers to a sound arena, planned and unplanned", "[planner][examples]") {
  namespace fs = std::filesystem;
  std::vector<fs::path> manifests;
  for (const auto& e : fs::directory_iterator(fs::path(KERN_SOURCE_ROOT) / "examples")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".json" && name.find(".config.") == std::string::npos) manifests.push_back(e.path());
  }
  std::sort(manifests.begin(), manifests.end());
  REQUIRE(manifests.size() >= 4);
  for (const fs::path& path : manifests) {
    INFO(path.string());
    auto text = read_file(path.string());
    REQUIRE(text.ok());
    SourceFile file(path.string(), *text);
    DiagnosticEngine diag;
    auto m = read_manifest(file, diag);
    REQUIRE(m.has_value());
    auto v = kern::verify::verify(*m, diag);
    REQUIRE(v.has_value());
    for (bool plan_memory : {true, false}) {
      auto bytes = kern::verify::lower(*v, *text, {plan_memory});
      REQUIRE(bytes.ok());
      const plan::Plan& p = *plan::GetPlan(bytes->data());
      CHECK_FALSE(check_plan_arena(p).has_value());
      const plan::Arena& a = *p.arena();
      CHECK(a.planned() == plan_memory);
      CHECK(a.size_bytes() >= a.peak_live_bytes());
      CHECK(a.peak_live_bytes() > 0);
      if (plan_memory) {
        CHECK(a.size_bytes() < a.unplanned_bytes());  // every Qwen3 program reuses bytes
      } else {
        CHECK(a.size_bytes() == a.unplanned_bytes());
      }
      // The planner's ranges (dispatch granular, from the manifest) contain
      // the checker's (launch granular, from the plan).
      auto coarse = kern::verify::manifest_arena_regions(*v);
      auto fine = plan_arena_regions(p);
      REQUIRE(coarse.size() == fine.size());
      for (size_t i = 0; i < fine.size(); ++i) {
        CHECK(coarse[i].size_bytes == fine[i].size_bytes);
        for (const LiveRange& f : fine[i].live) {
          bool inside = std::any_of(coarse[i].live.begin(), coarse[i].live.end(),
                                    [&](const LiveRange& c) { return c.begin <= f.begin && f.end <= c.end; });
          CHECK(inside);
        }
      }
    }
  }
}
