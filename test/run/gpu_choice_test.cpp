// kern-run --gpus (kern-run/gpu_choice.h): the ordinals of the ranks, and
// the refusals that come before any rank starts.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kern-run/gpu_choice.h"

using namespace kern;
using namespace kern::run;

TEST_CASE("gpu choice: --gpus lists the ranks' ordinals; without it rank r takes ordinal r", "[gpus]") {
  auto none = parse_gpus("", 4);
  REQUIRE(none.ok());
  CHECK(none.value().empty());
  CHECK(gpu_of_rank(none.value(), 0) == 0);
  CHECK(gpu_of_rank(none.value(), 3) == 3);
  auto listed = parse_gpus("2,0,5", 2);  // more than --tp: the first ones are used
  REQUIRE(listed.ok());
  CHECK(listed.value() == std::vector<int>{2, 0, 5});
  CHECK(gpu_of_rank(listed.value(), 0) == 2);
  CHECK(gpu_of_rank(listed.value(), 1) == 0);
  CHECK(check_gpus(listed.value(), 2, 6).ok());
  CHECK(check_gpus({}, 2, 2).ok());
}

TEST_CASE("gpu choice: --gpus refuses a field that is no ordinal or a duplicate or too few GPUs and names what is wrong", "[gpus]") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0,x", "entry 2 ('x') is not a CUDA ordinal"},
      {"0,,1", "entry 2 ('') is not a CUDA ordinal"},
      {"-1", "entry 1 ('-1') is not a CUDA ordinal"},
      {"1 ,2", "entry 1 ('1 ') is not a CUDA ordinal"},
      {"3,3", "GPU 3 is listed twice"},
      {"0", "--gpus lists 1 GPU but --tp 2 needs one per rank"},
  };
  for (const auto& [text, needle] : bad) {
    INFO(text);
    auto r = parse_gpus(text, 2);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kUsage);
    CHECK_THAT(r.error().message, Catch::Contains(needle));
  }
}

TEST_CASE("gpu choice: fewer visible GPUs than --tp or a listed GPU that is not visible is a usage error", "[gpus]") {
  auto few = check_gpus({}, 2, 1);
  REQUIRE_FALSE(few.ok());
  CHECK(few.error().kind == ErrorKind::kUsage);
  CHECK_THAT(few.error().message, Catch::Contains("--tp 2 needs 2 GPUs; 1 is visible"));
  auto absent = check_gpus({0, 4}, 2, 4);
  REQUIRE_FALSE(absent.ok());
  CHECK_THAT(absent.error().message, Catch::Contains("--gpus names GPU 4 but only 4 are visible (ordinals 0..3)"));
}
