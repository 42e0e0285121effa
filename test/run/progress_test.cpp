// The progress line: silent when disabled or before its delay, '\r'-redrawn
// in place, padded over a longer previous line, and erased by clear().
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "kern-run/progress.h"

using namespace kern;

namespace {

/// What was written to a temporary FILE*.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::string out(static_cast<size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  size_t n = std::fread(out.data(), 1, out.size(), f);
  out.resize(n);
  return out;
}

}  // namespace

TEST_CASE("a disabled progress line prints nothing", "[run][progress]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  run::ProgressLine p(f, false, std::chrono::milliseconds(0));
  p.update("prefill", 5, 10, "tokens");
  p.clear();
  CHECK(contents(f).empty());
  std::fclose(f);
}

TEST_CASE("a progress line waits for its delay before it appears", "[run][progress]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  run::ProgressLine p(f, true, std::chrono::hours(1));
  p.update("prefill", 10, 10, "tokens");
  CHECK_FALSE(p.visible());
  CHECK(contents(f).empty());
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
  CHECK(contents(f) == "\r" + first + "\r" + second + pad + "\r" + std::string(first.size(), ' ') + "\r");
  std::fclose(f);
}
