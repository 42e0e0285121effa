// Per-step host and device figures of the engine's decode loop (decode_stats.h).
#include "kern-engine/decode_stats.h"

#include <algorithm>

namespace kern::engine {

std::span<const DecodeStepRecord> steady_part(std::span<const DecodeStepRecord> sequence) {
  if (sequence.size() <= kDecodeWarmupSteps + kDecodeDrainSteps) return {};
  return sequence.subspan(kDecodeWarmupSteps, sequence.size() - kDecodeWarmupSteps - kDecodeDrainSteps);
}

DecodeStats average_decode(std::span<const DecodeStepRecord> steady) {
  DecodeStats st;
  if (steady.empty()) return st;
  uint64_t timed = 0;
  for (const DecodeStepRecord& r : steady) {
    st.launches_per_step += static_cast<double>(r.launches);
    st.host_writes_per_step += static_cast<double>(r.host_writes);
    st.host_waits_per_step += static_cast<double>(r.host_waits);
    if (r.gpu_busy_ms >= 0 && r.gpu_gap_ms >= 0) {
      ++timed;
      st.gpu_busy_ms_per_step += r.gpu_busy_ms;
      st.gpu_wall_ms_per_step += r.gpu_busy_ms + r.gpu_gap_ms;
      st.host_gap_us_per_step += r.gpu_gap_ms * 1000.0;
      st.host_gap_us_max = std::max(st.host_gap_us_max, r.gpu_gap_ms * 1000.0);
    }
  }
  st.steady_steps = steady.size();
  const double n = static_cast<double>(steady.size());
  st.launches_per_step /= n;
  st.host_writes_per_step /= n;
  st.host_waits_per_step /= n;
  if (timed > 0) {
    st.gpu_timed = true;
    const double t = static_cast<double>(timed);
    st.gpu_busy_ms_per_step /= t;
    st.gpu_wall_ms_per_step /= t;
    st.host_gap_us_per_step /= t;
  }
  return st;
}

}  // namespace kern::engine
