// The cpu device's collective transport (kern-load/collective/, docs/parallel.md):
// ranks as threads of this process joining through a private rendezvous
// directory over the real Gloo plugin; a missing plugin, a rank that never
// joins and a rank that never answers are errors naming the package or the
// rank. Every wait is bounded by a timeout of at most 2 s. Skipped (with a
// warning) where kern was built without libgloo-dev.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kern-load/collective/gloo_collective.h"

namespace kern::load {
namespace {

bool plugin_built() {
  for (const std::string& p : gloo_plugin_candidates())
    if (std::filesystem::is_regular_file(p)) return true;
  WARN("kern-gloo.so was not built (no libgloo-dev): skipped");
  return false;
}

/// A fresh private directory, removed at scope end.
struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "kern-gloo-test.XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

GlooOptions options(uint32_t rank, uint32_t world, const std::string& dir, uint32_t timeout_ms) {
  GlooOptions o;
  o.rank = rank;
  o.world = world;
  o.rendezvous_dir = dir;
  o.timeout_ms = timeout_ms;
  return o;
}

TEST_CASE("ranks join through a private rendezvous directory and all-gather in rank order", "[load][parallel]") {
  if (!plugin_built()) return;
  TempDir dir;
  constexpr uint32_t kWorld = 3;
  std::vector<std::vector<int32_t>> got(kWorld);
  std::vector<std::string> errors(kWorld);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < kWorld; ++r)
    threads.emplace_back([&, r] {
      auto c = connect_gloo(options(r, kWorld, dir.path, 2000));
      if (!c.ok()) {
        errors[r] = c.error().message;
        return;
      }
      const int32_t mine[2] = {static_cast<int32_t>(10 * r), static_cast<int32_t>(10 * r + 1)};
      got[r].assign(2 * kWorld, -1);
      for (int round = 0; round < 2; ++round)  // twice: slots of consecutive collectives do not mix
        if (Status s = (*c)->all_gather(mine, got[r].data(), sizeof mine); !s.ok()) errors[r] = s.error().message;
      if (errors[r].empty()) {
        const uint8_t sha[4] = {1, 2, 3, static_cast<uint8_t>(r == 2)};  // rank 2 loaded another plan
        Status s = check_same_plan(**c, sha);
        errors[r] = s.ok() ? "" : s.error().message;
      }
    });
  for (auto& t : threads) t.join();
  for (uint32_t r = 0; r < kWorld; ++r) {
    INFO("rank " << r);
    CHECK(got[r] == std::vector<int32_t>{0, 1, 10, 11, 20, 21});
    CHECK(errors[r].find("rank 2 loaded a different plan from rank 0's") != std::string::npos);
  }
}

TEST_CASE("a missing Gloo plugin is an error naming the Debian package", "[load][parallel]") {
  GlooOptions o = options(0, 2, "/nonexistent", 100);
  o.plugin_path = "/nonexistent/kern-gloo.so";
  auto c = connect_gloo(o);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("libgloo-dev") != std::string::npos);
  CHECK(c.error().message.find("/nonexistent/kern-gloo.so") != std::string::npos);
}

TEST_CASE("a rank alone in a world of two gives up after its timeout", "[load][parallel]") {
  if (!plugin_built()) return;
  TempDir dir;
  auto c = connect_gloo(options(0, 2, dir.path, 300));
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("rank 0 of 2") != std::string::npos);
}

TEST_CASE("an all-gather names the rank that did not answer within the timeout", "[load][parallel]") {
  if (!plugin_built()) return;
  TempDir dir;
  std::string error;
  std::unique_ptr<cpu::Collective> quiet;  // rank 1: joins, then never gathers
  std::thread t([&] {
    auto c = connect_gloo(options(1, 2, dir.path, 2000));
    if (c.ok()) quiet = std::move(*c);
  });
  auto c = connect_gloo(options(0, 2, dir.path, 500));
  t.join();
  REQUIRE(c.ok());
  REQUIRE(quiet != nullptr);
  float in = 1.0f, out[2] = {};
  const Status s = (*c)->all_gather(&in, out, sizeof in);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("rank 1 did not answer") != std::string::npos);
}

}  // namespace
}  // namespace kern::load
