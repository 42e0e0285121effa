// Per-rank figures of a tensor-parallel world (kern-run/rank_figures.h) and
// the variable-size all-gather they travel in (kern-run/all_gather_bytes.h):
// the bytes round trip, a peer's bytes are checked before use, the report's
// text and JSON.
#include "kern-run/rank_figures.h"

#include <cstring>

#include <catch2/catch.hpp>

#include "kern-run/all_gather_bytes.h"
#include "test/run/scripted_world.h"

using namespace kern;
using namespace kern::run;
using kern::run::test::ScriptedWorld;

namespace {

RankFigures figures_of_rank(uint32_t rank, bool with_collective) {
  RankFigures f;
  f.rank = rank;
  f.device = rank == 0 ? "cpu" : "cuda:" + std::to_string(rank) + " (NVIDIA H100 80GB HBM3)";
  f.weights = 751'000'000 + rank;
  f.states = 117'440'512;
  f.arena = 3'500'000;
  f.io = 1'250'000;
  f.total = f.weights + f.states + f.arena + f.io;
  f.peak_rss = 1'900'000'000;
  if (with_collective) f.collective = cpu::CollectiveStats{56, 917'504, 12.5};
  return f;
}

bool same_figures(const RankFigures& a, const RankFigures& b) {
  const bool same_collective =
      a.collective.has_value() == b.collective.has_value() &&
      (!a.collective || (a.collective->calls == b.collective->calls &&
                         a.collective->bytes_sent == b.collective->bytes_sent &&
                         a.collective->wait_ms == b.collective->wait_ms));
  return a.rank == b.rank && a.device == b.device && a.weights == b.weights && a.states == b.states &&
         a.arena == b.arena && a.io == b.io && a.total == b.total && a.peak_rss == b.peak_rss && same_collective;
}

}  // namespace

TEST_CASE("rank figures round trip through their bytes", "[rank_figures]") {
  for (bool with_collective : {true, false}) {
    const RankFigures f = figures_of_rank(3, with_collective);
    auto back = decode_rank_figures(encode_rank_figures(f));
    REQUIRE(back.ok());
    CHECK(same_figures(*back, f));
  }
}

TEST_CASE("rank figures refuse truncated, trailing and malformed bytes", "[rank_figures]") {
  const auto bytes = encode_rank_figures(figures_of_rank(1, true));
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    auto r = decode_rank_figures(std::span<const uint8_t>(bytes.data(), n));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kDevice);
  }
  auto longer = bytes;
  longer.push_back(0);
  auto trailing = decode_rank_figures(longer);
  REQUIRE_FALSE(trailing.ok());
  CHECK_THAT(trailing.error().message, Catch::Contains("rank figures: trailing bytes"));
  // A device name longer than the message: refused before any allocation.
  auto huge = bytes;
  const uint64_t length = uint64_t{1} << 62;
  std::memcpy(huge.data() + sizeof(uint32_t), &length, sizeof(length));
  auto long_name = decode_rank_figures(huge);
  REQUIRE_FALSE(long_name.ok());
  CHECK_THAT(long_name.error().message, Catch::Contains("device count 4611686018427387904 exceeds the message"));
  // The collective flag is 0 or 1.
  auto flag = encode_rank_figures(figures_of_rank(1, false));
  flag.back() = 2;
  auto bad_flag = decode_rank_figures(flag);
  REQUIRE_FALSE(bad_flag.ok());
  CHECK_THAT(bad_flag.error().message, Catch::Contains("collective flag 2"));
}

TEST_CASE("every rank's figures are gathered by rank, and a rank's wrong or unreadable bytes refused",
          "[rank_figures]") {
  const RankFigures mine = figures_of_rank(1, true);
  ScriptedWorld world(1, {encode_rank_figures(figures_of_rank(0, true)), {},
                          encode_rank_figures(figures_of_rank(2, false))});
  auto all = gather_rank_figures(world, mine);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  for (uint32_t r = 0; r < 3; ++r) CHECK(same_figures((*all)[r], figures_of_rank(r, r != 2)));

  ScriptedWorld impostor(0, {{}, encode_rank_figures(figures_of_rank(2, true))});
  auto wrong = gather_rank_figures(impostor, figures_of_rank(0, true));
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(wrong.error().message, Catch::Contains("rank 1 sent the figures of rank 2"));

  ScriptedWorld garbled(0, {{}, {1, 2, 3}});
  auto unreadable = gather_rank_figures(garbled, figures_of_rank(0, true));
  REQUIRE_FALSE(unreadable.ok());
  CHECK_THAT(unreadable.error().message, Catch::StartsWith("rank 1: rank figures: truncated"));
}

TEST_CASE("the variable-size all-gather bounds every rank's size", "[rank_figures]") {
  const std::vector<uint8_t> four = {1, 2, 3, 4}, five = {1, 2, 3, 4, 5};
  ScriptedWorld world(0, {{}, five, {}});
  auto fits = all_gather_bytes(world, four, 5, "test bytes");
  REQUIRE(fits.ok());
  CHECK((*fits)[0] == four);
  CHECK((*fits)[1] == five);
  CHECK((*fits)[2].empty());

  ScriptedWorld big_peer(0, {{}, five});
  auto peer_over = all_gather_bytes(big_peer, four, 4, "test bytes");
  REQUIRE_FALSE(peer_over.ok());
  CHECK(peer_over.error().kind == ErrorKind::kDevice);
  CHECK_THAT(peer_over.error().message, Catch::Contains("test bytes: rank 1 sent a size of 5 bytes (at most 4)"));

  ScriptedWorld quiet(0, {{}, {}});
  auto mine_over = all_gather_bytes(quiet, five, 4, "test bytes");
  REQUIRE_FALSE(mine_over.ok());
  CHECK(mine_over.error().kind == ErrorKind::kUsage);
  CHECK(quiet.calls == 0);  // refused before the world hears of it

  ScriptedWorld empty(0, {{}, {}});
  auto nothing = all_gather_bytes(empty, {}, 4, "test bytes");
  REQUIRE(nothing.ok());
  CHECK(empty.calls == 1);  // the sizes only: no bytes to gather
}

TEST_CASE("the memory report's per-rank lines and --json ranks", "[rank_figures]") {
  const std::vector<RankFigures> ranks = {figures_of_rank(0, true), figures_of_rank(1, false)};
  CHECK(render_rank_lines(ranks) ==
        "rank 0 (cpu): weights 751.0 MB, states 117.4 MB, arena 3.5 MB, io 1.2 MB, total 873.2 MB; peak resident "
        "1900.0 MB; collectives 56 calls, 0.9 MB sent, 12.5 ms\n"
        "rank 1 (cuda:1 (NVIDIA H100 80GB HBM3)): weights 751.0 MB, states 117.4 MB, arena 3.5 MB, io 1.2 MB, "
        "total 873.2 MB; peak resident 1900.0 MB\n");
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  write_ranks_json(w, ranks);
  w.EndObject();
  CHECK(std::string(sb.GetString()) ==
        "{\"ranks\":[{\"rank\":0,\"device\":\"cpu\",\"memory\":{\"weights\":751000000,\"states\":117440512,"
        "\"arena\":3500000,\"io\":1250000,\"total\":873190512,\"peak_rss\":1900000000},\"collective\":{\"calls\":56,"
        "\"bytes_sent\":917504,\"wait_ms\":12.5}},{\"rank\":1,\"device\":\"cuda:1 (NVIDIA H100 80GB HBM3)\","
        "\"memory\":{\"weights\":751000001,\"states\":117440512,\"arena\":3500000,\"io\":1250000,"
        "\"total\":873190513,\"peak_rss\":1900000000},\"collective\":null}]}");
}
