// The one-line progress display on stderr (progress.h).
#include "kern-run/progress.h"

#include <algorithm>

namespace kern::run {

ProgressLine::ProgressLine(std::FILE* out, bool enabled, std::chrono::milliseconds delay)
    : out_(out), enabled_(enabled), delay_(delay) {}

void ProgressLine::update(const std::string& what, uint64_t done, uint64_t total, const char* unit) {
  if (!enabled_) return;
  auto now = Clock::now();
  if (what != phase_) {
    phase_ = what;
    phase_start_ = now;
  }
  if (now - phase_start_ < delay_) return;
  bool last = done >= total;
  if (visible_ && !last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  unsigned percent = total ? static_cast<unsigned>(done * 100 / total) : 100;
  char line[160];
  int n = std::snprintf(line, sizeof line, "kern-run: %s %llu/%llu %s (%u%%)", what.c_str(),
                        static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), unit, percent);
  size_t width = n > 0 ? static_cast<size_t>(n) : 0;
  // Pad with spaces so a shorter line fully covers the previous one.
  std::fprintf(out_, "\r%s%*s", line, static_cast<int>(drawn_width_ > width ? drawn_width_ - width : 0), "");
  std::fflush(out_);
  drawn_width_ = std::max(drawn_width_, width);
  visible_ = true;
  last_draw_ = now;
}

void ProgressLine::clear() {
  if (!visible_) return;
  std::fprintf(out_, "\r%*s\r", static_cast<int>(drawn_width_), "");
  std::fflush(out_);
  visible_ = false;
  drawn_width_ = 0;
}

}  // namespace kern::run
