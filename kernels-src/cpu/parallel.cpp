// run_ranges and cpu_threads (parallel.h): the fan-out over contiguous item
// ranges, on a pool of worker threads started once (a std::thread per
// launch cost its start and join on every launch: ~140 launches per decode
// step), with std::threads per call where the pool cannot serve; exceptions
// carried back to the caller.
#include "kernels-src/cpu/parallel.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KERN_CPU_RELAX() _mm_pause()
#else
#define KERN_CPU_RELAX() ((void)0)
#endif

namespace kern::cpu {

namespace {

using RangeFn = std::function<void(unsigned, int64_t, int64_t)>;

/// The most threads a launch may use: the online cores, at most
/// kMaxThreads. Read once: glibc counts the online cores by reading
/// /sys/devices/system/cpu/online on every hardware_concurrency call (open,
/// read, close: about 1% of a decode step's calling thread at ~150
/// launches per step).
unsigned usable_cores() {
  static const unsigned cores = std::max(1u, std::min(std::thread::hardware_concurrency(), kMaxThreads));
  return cores;
}

/// Runs range t of the call and keeps its exception.
void run_range(const RangeFn& fn, int64_t items, unsigned threads, unsigned t, std::exception_ptr* errors) {
  try {
    fn(t, items * t / threads, items * (t + 1) / threads);
  } catch (...) {
    errors[t] = std::current_exception();  // a throw escaping a worker would terminate
  }
}

/// How long a waiting thread spins before it sleeps. A decode step's
/// launches follow each other within microseconds, and waking a sleeping
/// worker is slow: on the 2-vCPU development VM a futex wake took ~1.6 ms
/// to start the worker, longer than a whole 32-row prefill GEMM, which then
/// ran on one thread (issue 46). 3 ms covers the gaps inside a prefill and
/// between decode steps; a worker idle longer sleeps.
constexpr auto kSpinTime = std::chrono::microseconds(3000);

/// How long a waiting thread spins before it also yields its core
/// (sched_yield) between checks. A decode step's launches follow each other
/// within a few microseconds, so a worker that has waited longer is most
/// likely waiting for a caller that other work on the cores has
/// descheduled: beside other work (load average 9.5, perf) the worker of a
/// decode step spent 1651 samples spinning against 837 in the GEMVs while
/// the caller ran 2439 in them. Yielding hands the core to whatever is
/// runnable there (the caller itself when it waits on this core); on an
/// idle machine sched_yield returns at once.
constexpr auto kYieldAfter = std::chrono::microseconds(50);

/// Spins (at most kSpinTime, yielding the core between checks after
/// kYieldAfter) while `a` holds `old`, then blocks in std::atomic::wait.
template <typename T>
T await_change(const std::atomic<T>& a, T old) {
  const auto start = std::chrono::steady_clock::now();
  for (int spin = 1;; ++spin) {
    const T now = a.load(std::memory_order_acquire);
    if (now != old) return now;
    KERN_CPU_RELAX();
    if (spin % 64 == 0) {
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > kSpinTime) break;
      if (waited > kYieldAfter) sched_yield();
    }
  }
  a.wait(old, std::memory_order_acquire);
  return a.load(std::memory_order_acquire);
}

/// The workers: worker w is asked for range w + 1 of each job and runs it
/// if it gets there before the caller has run range 0 (else the caller
/// runs it: Pool::run). One caller at a time
/// (the others, and a run_ranges inside a range, start std::threads as
/// before); never destroyed (the workers wait for work until the process
/// exits), and unused in a child after fork(), which has no workers.
class Pool {
 public:
  static Pool& get() {
    static Pool* pool = new Pool();  // leaked on purpose: no worker to join at exit
    return *pool;
  }

  /// Runs the `threads` ranges of fn (range 0 here, the others on workers)
  /// and returns true once all are done; false, having run nothing, when the
  /// pool is in use, in a forked child, threads exceeds the cores (at most
  /// kMaxThreads), or it cannot start threads - 1 workers.
  bool run(int64_t items, unsigned threads, const RangeFn& fn, std::exception_ptr* errors) {
    std::unique_lock<std::mutex> lock(use_, std::try_to_lock);
    // More threads than cores: spinning workers would take turns on the
    // cores (the std::thread path instead).
    if (!lock.owns_lock() || ::getpid() != pid_ || threads > cores_) return false;
    try {
      while (workers_.size() < threads - 1) {
        // A new worker waits for the job after the current one (it must not
        // take the job already done as new).
        const auto w = static_cast<unsigned>(workers_.size());
        const uint64_t now = job_.load(std::memory_order_relaxed);
        workers_.emplace_back([this, w, now] { work(w, now); });
        workers_.back().detach();
      }
    } catch (const std::system_error&) {
      return false;  // the workers started so far wait for the next job
    } catch (const std::bad_alloc&) {
      return false;
    }
    fn_ = &fn;
    items_ = items;
    threads_ = threads;
    errors_ = errors;
    // Workers 0 .. threads - 2 are asked for ranges 1 .. threads - 1; each
    // takes its range only by entering the job (work()) before this thread
    // closes it. A worker that has not entered by the time range 0 is done
    // (descheduled: other work shares the cores) never will, and its range
    // runs here instead of this thread waiting for its time slice: beside
    // other work a decode step's ~140 launches each waited for both threads
    // to be scheduled (issue 46). Any range gives the same bits on any
    // thread.
    const uint64_t job = job_.load(std::memory_order_relaxed) + 1;
    const uint64_t asked = (uint64_t{1} << (threads - 1)) - 1;
    finished_.store(0, std::memory_order_relaxed);
    state_.store(job_bits(job) | (asked << kAskedShift), std::memory_order_release);
    job_.store(job, std::memory_order_release);
    job_.notify_all();
    run_range(fn, items, threads, 0, errors);
    const uint64_t entered = state_.fetch_or(kClosed, std::memory_order_acq_rel) & kEnteredMask;
    for (unsigned w = 0; w + 1 < threads; ++w)
      if ((entered & (uint64_t{1} << w)) == 0) run_range(fn, items, threads, w + 1, errors);
    // Only the workers that entered read this job's fields: once they are
    // done the next job may replace them.
    const auto want = static_cast<unsigned>(std::popcount(entered));
    for (unsigned done = finished_.load(std::memory_order_acquire); done != want;) done = await_change(finished_, done);
    return true;
  }

 private:
  /// state_: the job's number (low 32 bits) in bits 32..63, kClosed, the
  /// workers asked for a range (bits 8..15) and those that entered (0..7).
  static constexpr uint64_t kEnteredMask = 0xff;
  static constexpr int kAskedShift = 8;
  static constexpr uint64_t kClosed = uint64_t{1} << 16;
  static_assert(kMaxThreads - 1 <= 8, "one bit per worker in state_'s masks");
  static uint64_t job_bits(uint64_t job) { return (job & 0xffffffffu) << 32; }

  Pool() : pid_(::getpid()), cores_(usable_cores()) {}

  /// Worker w: for each new job, enters it if it is still open and asks
  /// for worker w (a compare-exchange on state_, so the caller's close and
  /// this entry are ordered), runs range w + 1, and counts itself finished;
  /// a job closed or replaced before it got there is left alone (its fields
  /// may already be the next job's).
  void work(unsigned w, uint64_t seen) {
    const uint64_t bit = uint64_t{1} << w;
    for (;;) {
      seen = await_change(job_, seen);
      uint64_t s = state_.load(std::memory_order_acquire);
      while ((s >> 32) == (seen & 0xffffffffu) && (s & kClosed) == 0 && ((s >> kAskedShift) & bit) != 0) {
        if (state_.compare_exchange_weak(s, s | bit, std::memory_order_acq_rel, std::memory_order_acquire)) {
          run_range(*fn_, items_, threads_, w + 1, errors_);
          finished_.fetch_add(1, std::memory_order_acq_rel);
          finished_.notify_one();
          break;
        }
      }
    }
  }

  std::mutex use_;
  const pid_t pid_;
  const unsigned cores_;  ///< the most threads a job may have
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> job_{0};       ///< bumped once per job (release: the fields below)
  std::atomic<uint64_t> state_{0};     ///< the current job's entry state (job_bits, masks, kClosed)
  std::atomic<unsigned> finished_{0};  ///< workers of the current job done with their range
  const RangeFn* fn_ = nullptr;
  int64_t items_ = 0;
  unsigned threads_ = 1;
  std::exception_ptr* errors_ = nullptr;
};

}  // namespace

unsigned cpu_threads(int64_t work, int64_t items, int64_t min_work) {
  if (work <= min_work || items <= 1) return 1;
  return static_cast<unsigned>(std::min<int64_t>(usable_cores(), items));
}

void run_ranges(int64_t items, unsigned threads, const RangeFn& fn) {
  threads = std::max(1u, threads);
  std::vector<std::exception_ptr> errors(threads);
  if (threads == 1) {
    run_range(fn, items, 1, 0, errors.data());
  } else if (!Pool::get().run(items, threads, fn, errors.data())) {
    std::vector<std::thread> pool;
    unsigned spawned = 1;  // range 0 always runs on this thread
    try {
      pool.reserve(threads);  // emplace_back below then only throws from std::thread
      for (; spawned < threads; ++spawned) pool.emplace_back(run_range, std::cref(fn), items, threads, spawned,
                                                             errors.data());
    } catch (const std::system_error&) {
      // No more threads: the ranges not handed out run here.
    } catch (const std::bad_alloc&) {
    }
    run_range(fn, items, threads, 0, errors.data());
    for (unsigned t = spawned; t < threads; ++t) run_range(fn, items, threads, t, errors.data());
    for (std::thread& th : pool) th.join();
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

void run_chunks(int64_t items, int64_t chunk, unsigned threads,
                const std::function<void(unsigned, int64_t, int64_t)>& fn) {
  threads = std::max(1u, std::min(threads, kMaxThreads));
  chunk = std::max<int64_t>(1, chunk);
  if (threads == 1) {
    for (int64_t b = 0; b < items; b += chunk) fn(0, b, std::min(items, b + chunk));
    return;
  }
  // Range u's next unclaimed item, each on its own cache line (the threads
  // claim chunks from their own cursor nearly all the time).
  struct alignas(64) Cursor {
    std::atomic<int64_t> next{0};
  };
  Cursor cursors[kMaxThreads];
  for (unsigned u = 0; u < threads; ++u) cursors[u].next.store(items * u / threads, std::memory_order_relaxed);
  run_ranges(threads, threads, [&](unsigned t, int64_t, int64_t) {
    for (unsigned i = 0; i < threads; ++i) {
      const unsigned u = (t + i) % threads;
      const int64_t end = items * (u + 1) / threads;
      for (;;) {
        const int64_t b = cursors[u].next.fetch_add(chunk, std::memory_order_relaxed);
        if (b >= end) break;
        fn(t, b, std::min(end, b + chunk));
      }
    }
  });
}

}  // namespace kern::cpu
