// run_ranges and cpu_threads (parallel.h): std::thread fan-out over
// contiguous item ranges, exceptions carried back to the caller.
#include "kernels-src/cpu/parallel.h"

#include <algorithm>
#include <exception>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

namespace kern::cpu {

unsigned cpu_threads(int64_t work, int64_t items, int64_t min_work) {
  if (work <= min_work || items <= 1) return 1;
  const unsigned cores = std::max(1u, std::min(std::thread::hardware_concurrency(), kMaxThreads));
  return static_cast<unsigned>(std::min<int64_t>(cores, items));
}

void run_ranges(int64_t items, unsigned threads, const std::function<void(unsigned, int64_t, int64_t)>& fn) {
  threads = std::max(1u, threads);
  std::vector<std::exception_ptr> errors(threads);
  const auto run = [&](unsigned t) {
    try {
      fn(t, items * t / threads, items * (t + 1) / threads);
    } catch (...) {
      errors[t] = std::current_exception();  // a throw escaping a std::thread would terminate
    }
  };
  std::vector<std::thread> pool;
  unsigned spawned = 1;  // range 0 always runs on this thread
  try {
    pool.reserve(threads);  // emplace_back below then only throws from std::thread
    for (; spawned < threads; ++spawned) pool.emplace_back(run, spawned);
  } catch (const std::system_error&) {
    // No more threads: the ranges not handed out run here.
  } catch (const std::bad_alloc&) {
  }
  run(0);
  for (unsigned t = spawned; t < threads; ++t) run(t);
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace kern::cpu
