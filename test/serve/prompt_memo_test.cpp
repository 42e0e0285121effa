// The memo of finished chat turns (kern-run/serve/prompt_memo.h): the
// longest remembered text a prompt starts with gives its ids; entries are
// bounded, refreshed when seen again.
#include <catch2/catch.hpp>

#include "kern-run/serve/prompt_memo.h"

using namespace kern::run::serve;

TEST_CASE("the prompt memo gives the ids of the longest remembered prefix of a text", "[serve][prefix]") {
  PromptMemo memo(2);
  CHECK_FALSE(memo.longest_prefix("anything").has_value());
  memo.remember("<a>hi", {1, 2});
  memo.remember("<a>hi<b>there", {1, 2, 3, 4});
  auto hit = memo.longest_prefix("<a>hi<b>there<c>more");
  REQUIRE(hit.has_value());
  CHECK(hit->bytes == 13);
  CHECK(hit->ids == std::vector<int64_t>{1, 2, 3, 4});
  hit = memo.longest_prefix("<a>hi<b>elsewhere");
  REQUIRE(hit.has_value());
  CHECK(hit->ids == std::vector<int64_t>{1, 2});
  CHECK_FALSE(memo.longest_prefix("<a>h").has_value());  // shorter than every entry
  CHECK_FALSE(memo.longest_prefix("<x>hi").has_value());
  // Bounded: a third entry drops the oldest ("<a>hi"); remembering it again refreshes it.
  memo.remember("<a>hi<b>there", {1, 2, 3, 4});
  memo.remember("<z>", {9});
  CHECK_FALSE(memo.longest_prefix("<a>hi<b>elsewhere").has_value());
  CHECK(memo.longest_prefix("<a>hi<b>there!")->ids.size() == 4);
  memo.remember("", {5});  // an empty text is never remembered
  CHECK(memo.longest_prefix("<z>")->ids == std::vector<int64_t>{9});
}
