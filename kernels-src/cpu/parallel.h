// The cpu reference kernels' thread fan-out: a launch large enough to pay
// for more threads splits its independent items (output column tiles,
// attention heads) into contiguous ranges, one per thread. Every item is
// computed alone, in the same order whatever the split, so results do not
// depend on the thread count or the machine.
#pragma once

#include <cstdint>
#include <functional>

namespace kern::cpu {

/// The work (multiply-adds of a vectorised loop) at or below which a launch
/// stays on the calling thread: handing a range to a pool worker costs a few
/// microseconds, starting a std::thread (where the pool cannot serve) tens.
inline constexpr int64_t kThreadWork = int64_t{1} << 20;

/// The most threads one launch runs on.
inline constexpr unsigned kMaxThreads = 8;

/// Threads for a launch of `work` over `items` independent items: 1 when
/// work <= min_work, else the cores (std::thread::hardware_concurrency, at
/// most kMaxThreads), never more than `items` (and at least 1).
unsigned cpu_threads(int64_t work, int64_t items, int64_t min_work = kThreadWork);

/// Runs fn(t, begin, end) for every t < threads on the range [items * t /
/// threads, items * (t + 1) / threads) of [0, items): range 0 on the calling
/// thread, the others on a process-wide pool of worker threads (started on
/// first use, threads - 1 of them, which spin up to 3 ms between launches,
/// yielding their core between checks after the first 50 us, then sleep); a
/// range whose worker has not started it by the time range 0 is done runs
/// on the calling thread after range 0 (a worker descheduled by
/// other work on the cores is not waited for). Where the pool cannot serve (another thread is using it, a call
/// from inside a range, threads above the cores, a child after fork()) the
/// other ranges run on std::threads started for the call, and any range
/// whose thread cannot be started on the calling thread. Returns once every
/// range is done; an exception thrown by fn (in any thread) is rethrown
/// here after every range has finished (the first one, by range).
/// threads == 0 runs as 1.
void run_ranges(int64_t items, unsigned threads, const std::function<void(unsigned, int64_t, int64_t)>& fn);

/// run_ranges with the ranges balanced at run time: [0, items) is cut into
/// `threads` (at most kMaxThreads) contiguous ranges as run_ranges does, and each thread t runs
/// fn(t, begin, end) on chunks of at most `chunk` (>= 1; below 1 runs as 1)
/// items of its own range in order, then takes the chunks left in the other
/// ranges (t + 1, t + 2, ... wrapping), so a thread slowed down (another
/// tenant on its core, a slower cache) hands its last chunks to the others
/// instead of keeping them waiting (an m = 8 decode step's GEMVs: up to
/// ~9% of it spent with one thread waiting for the other). Every chunk
/// runs exactly once, on whichever thread takes it, and chunk boundaries
/// do not depend on the timing: per item the same work whatever the thread.
/// Exceptions as run_ranges (a thread stops at its first; the others go on
/// taking chunks).
void run_chunks(int64_t items, int64_t chunk, unsigned threads,
                const std::function<void(unsigned, int64_t, int64_t)>& fn);

}  // namespace kern::cpu
