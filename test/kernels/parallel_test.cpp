// run_ranges and cpu_threads (kernels-src/cpu/parallel.h): every item runs
// exactly once on the documented ranges, exceptions come back to the caller
// after every range has finished, and small launches stay on one thread;
// the worker pool serves back-to-back launches, concurrent and nested
// callers, a forked child and workers sharing one core with the caller.
#include <dirent.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels-src/cpu/parallel.h"

using kern::cpu::cpu_threads;
using kern::cpu::run_ranges;

namespace {

/// run_ranges(items, threads) over a fresh count per item: true when every
/// item ran exactly once.
bool each_once(int64_t items, unsigned threads) {
  std::vector<std::atomic<int>> seen(static_cast<size_t>(items));
  run_ranges(items, threads, [&](unsigned, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)]++;
  });
  return std::all_of(seen.begin(), seen.end(), [](const std::atomic<int>& s) { return s.load() == 1; });
}

}  // namespace

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
  // The calling thread's own range and another; 2 threads run on the pool
  // (on a machine with 2 cores or more), 4 on 2 cores start threads.
  for (const auto& [threads, failing] : {std::pair{4u, 0u}, std::pair{4u, 2u}, std::pair{2u, 0u}, std::pair{2u, 1u}}) {
    INFO(threads << " threads, range " << failing << " throws");
    std::atomic<int> done{0};
    CHECK_THROWS_WITH(run_ranges(40, threads,
                                 [&](unsigned t, int64_t, int64_t) {
                                   if (t == failing) throw std::runtime_error("range failed");
                                   done++;
                                 }),
                      "range failed");
    CHECK(done.load() == static_cast<int>(threads) - 1);
    CHECK(each_once(40, threads));  // and the next call runs normally
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

TEST_CASE("run_chunks runs every chunk of every range once, the same chunks whatever the timing",
          "[kernels][parallel]") {
  for (const int64_t items : {0, 1, 7, 100, 333}) {
    for (const int64_t chunk : {-2, 0, 1, 4, 32, 1000}) {
      for (const unsigned threads : {0u, 1u, 2u, 3u, 8u, 200u}) {
        INFO("items " << items << " chunk " << chunk << " threads " << threads);
        const unsigned used = std::max(1u, std::min(threads, kern::cpu::kMaxThreads));
        const int64_t step = std::max<int64_t>(1, chunk);
        // The chunks: range u's [items u / used, items (u + 1) / used) cut every `step` from its start.
        std::vector<std::pair<int64_t, int64_t>> want;
        for (unsigned u = 0; u < used; ++u) {
          const int64_t end = items * (u + 1) / used;
          for (int64_t b = items * u / used; b < end; b += step) want.emplace_back(b, std::min(end, b + step));
        }
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> got;
        std::vector<unsigned> bad_thread;
        kern::cpu::run_chunks(items, chunk, threads, [&](unsigned t, int64_t b, int64_t e) {
          const std::lock_guard<std::mutex> lock(mu);
          got.emplace_back(b, e);
          if (t >= used) bad_thread.push_back(t);
        });
        std::sort(got.begin(), got.end());
        CHECK(got == want);
        CHECK(bad_thread.empty());
      }
    }
  }
}

TEST_CASE("run_chunks hands a held-up thread's chunks to the others, and rethrows a chunk's exception",
          "[kernels][parallel]") {
  // Thread 0 holds its first chunk until another thread has run a chunk of
  // range 0 (bounded: 30 s, then the test fails); 2 threads run at once on
  // the pool or on std::threads, so the wait ends once thread 1 is done
  // with range 1, whatever the machine's speed.
  std::mutex mu;
  std::condition_variable cv;
  int stolen = 0;
  bool timed_out = false;
  std::vector<std::atomic<int>> seen(20);
  kern::cpu::run_chunks(20, 1, 2, [&](unsigned t, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)]++;
    std::unique_lock<std::mutex> lock(mu);
    if (t != 0 && b < 10) {
      ++stolen;
      cv.notify_all();
    }
    if (t == 0 && b == 0) timed_out = !cv.wait_for(lock, std::chrono::seconds(30), [&] { return stolen > 0; });
  });
  CHECK_FALSE(timed_out);
  CHECK(stolen > 0);
  for (const auto& s : seen) CHECK(s.load() == 1);

  std::atomic<int> done{0};
  CHECK_THROWS_WITH(kern::cpu::run_chunks(40, 3, 2,
                                          [&](unsigned, int64_t b, int64_t) {
                                            if (b == 23) throw std::runtime_error("chunk failed");
                                            done++;
                                          }),
                    "chunk failed");
  // The thread that threw stops; the other runs every chunk left, in both
  // ranges: all 14 chunks but the one that threw.
  CHECK(done.load() == 13);
  CHECK(each_once(40, 2));
}

TEST_CASE("run_ranges runs thousands of launches back to back on its pool, workers added as threads grow",
          "[kernels][parallel]") {
  const unsigned cores = std::max(1u, std::min(std::thread::hardware_concurrency(), kern::cpu::kMaxThreads));
  int bad = 0;
  for (int call = 0; call < 3000; ++call) {
    // 2 threads, then up to the cores (new workers mid-run, on a machine
    // with more than 2 cores; on 2 the pool keeps its one worker), and one
    // more than the cores now and then (the std::thread path).
    unsigned threads = 2u;
    if (call >= 1000)
      threads = call % 50 == 0 ? cores + 1 : 2u + static_cast<unsigned>(call % 7) % std::max(1u, cores - 1);
    bad += each_once(64 + call % 7, threads) ? 0 : 1;
  }
  CHECK(bad == 0);
}

TEST_CASE("run_ranges from several threads at once, and from inside a range, runs every item once",
          "[kernels][parallel]") {
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)  // one of them gets the pool, the others start threads
    callers.emplace_back([&] {
      for (int call = 0; call < 300; ++call) bad += each_once(100, 2) ? 0 : 1;
    });
  for (std::thread& t : callers) t.join();
  CHECK(bad.load() == 0);
  // Nested: each range of the outer call runs an inner run_ranges.
  std::atomic<int> inner_bad{0};
  run_ranges(4, 2, [&](unsigned, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) inner_bad += each_once(50, 2) ? 0 : 1;
  });
  CHECK(inner_bad.load() == 0);
}

TEST_CASE("run_ranges works in a child after fork(), which has none of the parent's workers",
          "[kernels][parallel]") {
  REQUIRE(each_once(100, 2));  // the parent's pool has its workers
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(20);  // a child stuck waiting for workers it does not have dies
    ::_exit(each_once(100, 2) && each_once(100, 4) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

namespace {

/// Sets the CPU affinity of every thread of this process (the pool's
/// workers included) to `mask`, returning each thread's previous mask.
std::vector<std::pair<pid_t, cpu_set_t>> pin_all_threads(const cpu_set_t& mask) {
  std::vector<std::pair<pid_t, cpu_set_t>> old;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return old;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const auto tid = static_cast<pid_t>(std::atoi(e->d_name));
    cpu_set_t prev;
    if (::sched_getaffinity(tid, sizeof prev, &prev) != 0) continue;
    if (::sched_setaffinity(tid, sizeof mask, &mask) == 0) old.emplace_back(tid, prev);
  }
  ::closedir(dir);
  return old;
}

}  // namespace

TEST_CASE("run_ranges and run_chunks run every item once when the workers share one core with the caller",
          "[kernels][parallel]") {
  // On one core the caller usually ends range 0 before its worker is
  // scheduled, and then runs the worker's range itself (Pool::run); which
  // thread runs a range is timing, so only the result is checked.
  REQUIRE(each_once(64, 2));  // the pool has its worker
  cpu_set_t one;
  CPU_ZERO(&one);
  const int cpu = ::sched_getcpu();
  CPU_SET(cpu >= 0 ? cpu : 0, &one);
  const auto old = pin_all_threads(one);
  int bad = 0;
  for (int call = 0; call < 500; ++call) {
    bad += each_once(64 + call % 5, 2) ? 0 : 1;
    std::vector<std::atomic<int>> seen(100);
    kern::cpu::run_chunks(100, 7, 2, [&](unsigned, int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)]++;
    });
    bad += std::all_of(seen.begin(), seen.end(), [](const std::atomic<int>& s) { return s.load() == 1; }) ? 0 : 1;
  }
  // An exception from the range the caller took over comes back as well.
  bool threw = false;
  try {
    run_ranges(2, 2, [](unsigned t, int64_t, int64_t) {
      if (t == 1) throw std::runtime_error("range 1 failed");
    });
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()) == "range 1 failed";
  }
  for (const auto& [tid, mask] : old) ::sched_setaffinity(tid, sizeof mask, &mask);
  CHECK(bad == 0);
  CHECK(threw);
}
