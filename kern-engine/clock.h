// The clock every engine timing uses (prefill, decode, speculative rounds,
// load phases) and the injectable `now` that lets tests make timings
// deterministic.
#pragma once

#include <chrono>
#include <functional>

namespace kern::engine {

/// Monotonic, unaffected by wall-clock changes.
using Clock = std::chrono::steady_clock;

/// Where the engine reads the time: Clock::now by default; a test passes a
/// fake that advances by a fixed step per call.
using NowFn = std::function<Clock::time_point()>;

/// `now`, or Clock::now when `now` is empty.
inline NowFn clock_or_default(NowFn now) {
  if (now) return now;
  return [] { return Clock::now(); };
}

/// Milliseconds from `t0` to `t1`.
inline double ms_between(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

/// Milliseconds elapsed since `t0` on Clock.
inline double ms_since(Clock::time_point t0) { return ms_between(t0, Clock::now()); }

}  // namespace kern::engine
