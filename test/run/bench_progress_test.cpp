// run_bench's per-test callback (kern-run bench prints each row from it, issue 25).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kern-run/bench.h"
#include "test/engine/tiny_model.h"

using namespace kern;
using namespace kern::test;

TEST_CASE("run_bench hands each test to the caller as soon as its repetitions are done", "[run][bench][progress]") {
  // kern-run bench prints each row from this callback (issue 25): every
  // test arrives once, in order, with all its timed repetitions.
  TinyModel m = load_tiny_model();
  run::BenchPlan plan;
  plan.prompt_lengths = {8, 4};
  plan.gen_lengths = {4};
  plan.reps = 2;
  plan.warmup = 1;
  plan.chunk = 4;
  std::vector<std::string> seen;
  auto tests = run::run_bench(*m.model, plan, [&](const run::BenchTest& t) {
    CHECK(t.ms.size() == 2);
    seen.push_back(t.name());
  });
  REQUIRE(tests.ok());
  CHECK(seen == std::vector<std::string>{"pp8", "pp4", "tg4"});
}
