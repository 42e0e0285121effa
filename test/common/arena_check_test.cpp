// The arena checker (common/arena_check.h) on hand-made layouts: overlaps in
// bytes and time are found, touching ranges are not conflicts, bounds and
// alignment are enforced, and the peak of live bytes is the lower bound.
#include <catch2/catch.hpp>

#include "common/arena_check.h"

namespace kern {
namespace {

using Kind = ArenaConflict::Kind;

ArenaRegion region(uint64_t offset, uint64_t size, std::vector<LiveRange> live) {
  return ArenaRegion{offset, size, std::move(live)};
}

TEST_CASE("regions live at the same launch must not share a byte", "[arena]") {
  // a [0, 512) live [0, 3); b [256, 768) live [2, 4): both live at launch 2.
  std::vector<ArenaRegion> r = {region(0, 512, {{0, 3}}), region(256, 512, {{2, 4}})};
  auto c = check_arena(r, 1024, 256);
  REQUIRE(c.has_value());
  CHECK(c->kind == Kind::kOverlap);
  CHECK(c->time == 2);
  CHECK(((c->a == 0 && c->b == 1) || (c->a == 1 && c->b == 0)));
}

TEST_CASE("regions share bytes when their live ranges do not meet", "[arena]") {
  // Half-open ranges: [0, 3) ends before [3, 5) starts.
  std::vector<ArenaRegion> r = {region(0, 512, {{0, 3}}), region(0, 512, {{3, 5}}), region(512, 256, {{0, 5}})};
  CHECK_FALSE(check_arena(r, 768, 256).has_value());
  CHECK(peak_live_bytes(r, 256) == 768);
}

TEST_CASE("a region with several ranges conflicts in any of them", "[arena]") {
  // scratch-like: live in dispatches [0, 1) and [6, 8); b lives [7, 9).
  std::vector<ArenaRegion> r = {region(0, 256, {{0, 1}, {6, 8}}), region(0, 256, {{1, 6}}), region(0, 256, {{7, 9}})};
  auto c = check_arena(r, 256, 256);
  REQUIRE(c.has_value());
  CHECK(c->time == 7);
}

TEST_CASE("a region's own overlapping ranges are not a conflict", "[arena]") {
  std::vector<ArenaRegion> r = {region(0, 256, {{0, 4}, {2, 6}, {6, 7}})};
  CHECK_FALSE(check_arena(r, 256, 256).has_value());
}

TEST_CASE("byte ranges that only touch do not overlap", "[arena]") {
  std::vector<ArenaRegion> r = {region(256, 256, {{0, 9}}), region(0, 256, {{0, 9}}), region(512, 1, {{0, 9}})};
  CHECK_FALSE(check_arena(r, 513, 256).has_value());
}

TEST_CASE("an overlap with a non-neighbour in offset order is found", "[arena]") {
  // big [0, 4096) lives [0, 1) and [5, 6); small ones tile [0, 1024) at
  // [1, 5); a late region inside big's bytes at [5, 6) hits big.
  std::vector<ArenaRegion> r = {region(0, 4096, {{0, 1}}), region(0, 512, {{1, 5}}), region(512, 512, {{1, 5}}),
                                region(2048, 256, {{5, 6}}), region(0, 4096, {{5, 6}})};
  auto c = check_arena(r, 4096, 256);
  REQUIRE(c.has_value());
  CHECK(c->kind == Kind::kOverlap);
  CHECK(c->time == 5);
}

TEST_CASE("every region must fit the arena and be aligned", "[arena]") {
  SECTION("past the end") {
    auto c = check_arena(std::vector<ArenaRegion>{region(768, 512, {{0, 1}})}, 1024, 256);
    REQUIRE(c.has_value());
    CHECK(c->kind == Kind::kOutOfBounds);
  }
  SECTION("offset + size overflows u64") {
    auto c = check_arena(std::vector<ArenaRegion>{region(UINT64_MAX - 255, 512, {{0, 1}})}, UINT64_MAX, 256);
    REQUIRE(c.has_value());
    CHECK(c->kind == Kind::kOutOfBounds);
  }
  SECTION("a region never live still has to fit") {
    auto c = check_arena(std::vector<ArenaRegion>{region(0, 2048, {})}, 1024, 256);
    REQUIRE(c.has_value());
    CHECK(c->kind == Kind::kOutOfBounds);
  }
  SECTION("misaligned") {
    auto c = check_arena(std::vector<ArenaRegion>{region(128, 128, {{0, 1}})}, 1024, 256);
    REQUIRE(c.has_value());
    CHECK(c->kind == Kind::kMisaligned);
  }
  SECTION("an empty region occupies nothing") {
    CHECK_FALSE(check_arena(std::vector<ArenaRegion>{region(5000, 0, {{0, 1}})}, 1024, 256).has_value());
  }
}

TEST_CASE("the peak counts sizes rounded up to the alignment at the busiest launch", "[arena]") {
  std::vector<ArenaRegion> r = {region(0, 100, {{0, 2}}), region(256, 300, {{1, 3}}), region(0, 1000, {{3, 4}})};
  CHECK(peak_live_bytes(r, 256) == 1024);  // 256 + 512 at launch 1; 1024 at launch 3
}

}  // namespace
}  // namespace kern
