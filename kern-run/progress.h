// A one-line progress display on stderr for long load and prefill phases
// ("kern-run: prefill 1024/4096 tokens (25%)"), redrawn in place with '\r'.
// Drawn only when enabled (kern-run enables it when stderr is a terminal)
// and only once a phase has lasted `delay`, so short runs print nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kern::run {

/// Not thread-safe; one phase at a time.
class ProgressLine {
 public:
  /// `out` is borrowed (stderr in kern-run). `delay`: how long a phase runs
  /// before the line appears; redraws are at most every 100 ms after that.
  ProgressLine(std::FILE* out, bool enabled, std::chrono::milliseconds delay = std::chrono::milliseconds(300));

  /// Reports `done` of `total` `unit`s of phase `what` ("prefill", "tokens").
  /// A new `what` starts a new phase (its own delay). The final update
  /// (done == total) is always drawn once the line is visible.
  void update(const std::string& what, uint64_t done, uint64_t total, const char* unit);

  /// Erases the line if one is drawn (call before printing other output).
  void clear();

  /// Whether anything is on screen now.
  bool visible() const { return visible_; }

 private:
  using Clock = std::chrono::steady_clock;
  std::FILE* out_;
  bool enabled_;
  std::chrono::milliseconds delay_;
  std::string phase_;
  Clock::time_point phase_start_, last_draw_;
  bool visible_ = false;
  size_t drawn_width_ = 0;  ///< characters of the line on screen
};

}  // namespace kern::run
