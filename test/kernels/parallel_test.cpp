// run_ranges and cpu_threads (kernels-src/cpu/parallel.h): every item runs
// exactly once on the documented ranges, exceptions come back to the caller
// after every range has finished, and small launches stay on one thread.
#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels-src/cpu/parallel.h"

using kern::cpu::cpu_threads;
using kern::cpu::run_ranges;

TEST_CASE("run_ranges runs every item once, range t on [items t / threads, items (t + 1) / threads)",
          "[kernels][parallel]") {
  for (const int64_t items : {0, 1, 5, 100}) {
    for (const unsigned threads : {0u, 1u, 2u, 3u, 8u, 200u}) {
      INFO("items " << items << " threads " << threads);
      const unsigned used = threads == 0 ? 1 : threads;
      std::vector<std::atomic<int>> seen(static_cast<size_t>(items));
      std::vector<int64_t> begins(used, -1), ends(used, -1);
      run_ranges(items, threads, [&](unsigned t, int64_t b, int64_t e) {
        begins[t] = b;
        ends[t] = e;
        for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)]++;
      });
      for (const auto& s : seen) CHECK(s.load() == 1);
      for (unsigned t = 0; t < used; ++t) {
        CHECK(begins[t] == items * t / used);
        CHECK(ends[t] == items * (t + 1) / used);
      }
    }
  }
}

TEST_CASE("run_ranges rethrows a range's exception after every other range has run", "[kernels][parallel]") {
  for (const unsigned failing : {0u, 2u}) {  // the calling thread's own range, and a spawned one
    INFO("range " << failing << " throws");
    std::atomic<int> done{0};
    CHECK_THROWS_WITH(run_ranges(40, 4,
                                 [&](unsigned t, int64_t, int64_t) {
                                   if (t == failing) throw std::runtime_error("range failed");
                                   done++;
                                 }),
                      "range failed");
    CHECK(done.load() == 3);
  }
}

TEST_CASE("cpu_threads keeps small launches on one thread and never exceeds the items or kMaxThreads",
          "[kernels][parallel]") {
  CHECK(cpu_threads(0, 1000) == 1);
  CHECK(cpu_threads(kern::cpu::kThreadWork, 1000) == 1);
  CHECK(cpu_threads(int64_t{1} << 40, 1) == 1);
  CHECK(cpu_threads(int64_t{1} << 40, 0) == 1);
  CHECK(cpu_threads(100, 1000, 10) >= 1);
  const unsigned cores = std::max(1u, std::min(std::thread::hardware_concurrency(), kern::cpu::kMaxThreads));
  CHECK(cpu_threads(int64_t{1} << 40, 1000) == cores);
  CHECK(cpu_threads(int64_t{1} << 40, 2) == std::min(cores, 2u));
}
