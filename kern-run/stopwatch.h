// Wall-clock timing for kern-run's reports (load phases, prefill, decode, bench).
#pragma once

#include <chrono>

namespace kern::run {

/// The clock every kern-run timing uses: monotonic, unaffected by clock changes.
using Clock = std::chrono::steady_clock;

/// Milliseconds elapsed since `t0` on Clock.
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace kern::run
