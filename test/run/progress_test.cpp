// The progress line: silent when disabled or before its delay, '\r'-redrawn
// in place, padded over a longer previous line, and erased by clear().
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "kern-run/progress.h"
#include "test/run/text_helpers.h"

using namespace kern;

TEST_CASE("a disabled progress line prints nothing", "[run][progress]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  run::ProgressLine p(f, false, std::chrono::milliseconds(0));
  p.update("prefill", 5, 10, "tokens");
  p.clear();
  CHECK(test::written_to(f).empty());
  std::fclose(f);
}

TEST_CASE("a progress line waits for its delay before it appears", "[run][progress]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  run::ProgressLine p(f, true, std::chrono::hours(1));
  p.update("prefill", 10, 10, "tokens");
  CHECK_FALSE(p.visible());
  CHECK(test::written_to(f).empty());
  std::fclose(f);
}

TEST_CASE("a progress line redraws in place and clear() erases it", "[run][progress]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  run::ProgressLine p(f, true, std::chrono::milliseconds(0));
  p.update("weights upload", 1000, 2000, "MiB");
  CHECK(p.visible());
  p.update("prefill", 4, 4, "tokens");  // a new phase; the final update is always drawn
  p.clear();
  CHECK_FALSE(p.visible());
  const std::string first = "kern-run: weights upload 1000/2000 MiB (50%)";
  const std::string second = "kern-run: prefill 4/4 tokens (100%)";
  const std::string pad(first.size() - second.size(), ' ');
  CHECK(test::written_to(f) == "\r" + first + "\r" + second + pad + "\r" + std::string(first.size(), ' ') + "\r");
  std::fclose(f);
}
