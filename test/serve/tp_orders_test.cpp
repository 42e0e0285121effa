// serve --tp's step orders (kern-run/serve/tp_orders.h): the bytes round
// trip, and bytes from another process are checked before use.
#include "kern-run/serve/tp_orders.h"

#include <cstring>

#include <catch2/catch.hpp>

#include "test/run/scripted_world.h"

using namespace kern;
using namespace kern::run::serve;

namespace {

StepOrders sample_orders() {
  StepOrders o;
  o.kind = StepOrders::Kind::kStep;
  o.aborts = {7, 3};
  engine::Request r;
  r.id = 9;
  r.prompt_ids = {1, 2, 151643};
  r.max_tokens = 12;
  r.stop_ids = {151645};
  r.chunk = 5;
  r.sampling.temperature = 0.7f;
  r.sampling.top_k = 40;
  r.sampling.top_p = 0.9f;
  r.sampling.min_p = 0.05f;
  r.sampling.seed = 1234567890123ULL;
  o.adds.push_back(r);
  r.id = 10;
  r.prompt_ids = {4};
  r.sync = true;
  o.adds.push_back(r);
  return o;
}

bool same_request(const engine::Request& a, const engine::Request& b) {
  return a.id == b.id && a.prompt_ids == b.prompt_ids && a.max_tokens == b.max_tokens && a.stop_ids == b.stop_ids &&
         a.chunk == b.chunk && a.sync == b.sync && a.speculative == b.speculative && a.sampling == b.sampling;
}

}  // namespace

TEST_CASE("step orders round trip through their bytes", "[tp_orders]") {
  const StepOrders o = sample_orders();
  const auto bytes = encode_orders(o);
  auto back = decode_orders(bytes);
  REQUIRE(back.ok());
  CHECK(back->kind == o.kind);
  CHECK(back->aborts == o.aborts);
  REQUIRE(back->adds.size() == 2);
  CHECK(same_request(back->adds[0], o.adds[0]));
  CHECK(same_request(back->adds[1], o.adds[1]));
  StepOrders idle;
  auto idle_back = decode_orders(encode_orders(idle));
  REQUIRE(idle_back.ok());
  CHECK(idle_back->kind == StepOrders::Kind::kIdle);
  CHECK(idle_back->adds.empty());
}

TEST_CASE("step orders refuse truncated, trailing, oversized and unknown bytes", "[tp_orders]") {
  const auto bytes = encode_orders(sample_orders());
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    auto r = decode_orders(std::span<const uint8_t>(bytes.data(), n));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kDevice);
  }
  auto longer = bytes;
  longer.push_back(0);
  auto trailing = decode_orders(longer);
  REQUIRE_FALSE(trailing.ok());
  CHECK_THAT(trailing.error().message, Catch::Contains("trailing bytes"));

  auto unknown = bytes;
  unknown[0] = 3;
  auto bad_kind = decode_orders(unknown);
  REQUIRE_FALSE(bad_kind.ok());
  CHECK_THAT(bad_kind.error().message, Catch::Contains("unknown kind 3"));

  // An aborts count far beyond the message: refused before any allocation.
  auto huge = bytes;
  const uint64_t count = uint64_t{1} << 60;
  std::memcpy(huge.data() + 1, &count, sizeof(count));
  auto too_many = decode_orders(huge);
  REQUIRE_FALSE(too_many.ok());
  CHECK_THAT(too_many.error().message, Catch::Contains("aborts count 1152921504606846976 exceeds the message"));
}

TEST_CASE("step orders carry the other ranks' reports to rank 0", "[tp_orders]") {
  using kern::run::test::ScriptedWorld;
  const std::vector<uint8_t> report1 = {1, 2, 3}, report2 = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 42};
  // Rank 0: its orders go out, the reports come back by rank (its own slot empty).
  ScriptedWorld at_root(0, {{}, report1, report2});
  std::vector<std::vector<uint8_t>> reports;
  auto sent = broadcast_orders(at_root, sample_orders(), {}, &reports);
  REQUIRE(sent.ok());
  CHECK(at_root.calls == 2);
  CHECK(same_request(sent->adds[0], sample_orders().adds[0]));
  REQUIRE(reports.size() == 3);
  CHECK(reports[0].empty());
  CHECK(reports[1] == report1);
  CHECK(reports[2] == report2);
  // Rank 2: it sends its report (longer than the orders or not) and gets rank 0's orders.
  ScriptedWorld at_rank2(2, {encode_orders(sample_orders()), report1, {}});
  auto got = broadcast_orders(at_rank2, StepOrders{}, report2);
  REQUIRE(got.ok());
  CHECK(got->aborts == sample_orders().aborts);
  REQUIRE(got->adds.size() == 2);
  CHECK(same_request(got->adds[1], sample_orders().adds[1]));
  // A rank 0 that sends nothing is refused.
  ScriptedWorld silent_root(1, {{}, {}});
  auto none = broadcast_orders(silent_root, StepOrders{}, report1);
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Catch::Contains("rank 0 sent none"));
}
