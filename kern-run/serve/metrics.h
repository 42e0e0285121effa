// kern-run serve's /metrics: counters and histograms in the Prometheus text
// exposition format (version 0.0.4), names prefixed "kern_". Updated from
// the HTTP threads (requests, tokens, latencies) and read with a snapshot of
// the engine worker's gauges (running, waiting, KV pages, batch); the
// decode batch occupancy (rows per decode step) is a histogram the engine
// worker feeds. Per-rank figures (memory, peak resident memory,
// collectives) carry a `rank` label, also at one rank.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kern-run/rank_figures.h"

namespace kern::run::serve {

/// A cumulative histogram with fixed upper bounds (seconds, or counts).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  /// Appends "<name>_bucket{le=...} N", _sum and _count lines.
  void render(const std::string& name, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  ///< per bucket, not cumulative; last: +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// The engine worker's state at one moment.
struct EngineGauges {
  /// Requests the engine had admitted at its last step, not finished: the
  /// same moment as kv_pages_used, so the two agree.
  uint64_t running = 0;
  /// Requests queued before the engine (bounded by --max-queue), plus those
  /// handed to it since its last step (its next step admits them).
  uint64_t waiting = 0;
  uint64_t kv_pages_used = 0;  ///< KV cache pages holding tokens of unfinished sequences
  uint64_t kv_pages_total = 0; ///< the pages of the loaded capacity
  uint64_t kv_pages_cached = 0;  ///< pages keyed in the prefix cache (held or not; unheld ones count as free)
  uint64_t prefix_cache_evictions = 0;  ///< cached pages reused for other tokens since the start
  /// Positions decode wrote, prefilled again before their pages were keyed
  /// (kern-engine/batch_engine.h), since the start.
  uint64_t prefix_cache_reprefilled_tokens = 0;
  /// Finished requests whose re-prefill has not run yet (0: caught up).
  uint64_t prefix_cache_reprefills_pending = 0;
  uint64_t batch_size = 0;     ///< rows of the last decode step (0 when nothing runs)
  uint64_t max_batch = 0;
  /// Every rank's figures by rank (rank 0 alone without --tp): memory by
  /// class, peak resident memory, collectives. A rank not heard from yet
  /// has an empty `device` and is left out.
  std::vector<RankFigures> ranks;
};

/// Bucket bounds for rows per decode step: 1, 2, ... up to min(max_batch,
/// 16), then powers of two, the last max_batch.
std::vector<double> batch_row_bounds(uint64_t max_batch);

/// The server's metrics (thread-safe).
class Metrics {
 public:
  /// `max_batch` bounds the rows per decode step (the occupancy histogram's buckets).
  explicit Metrics(uint64_t max_batch = 1);
  /// One finished HTTP request on a generation endpoint with `status`.
  void count_request(int status);
  /// A finished request's prompt tokens (`cached` of them mapped from the
  /// prefix cache, the rest computed) and generated tokens.
  void add_tokens(uint64_t prompt, uint64_t generated, uint64_t cached = 0);
  void observe_ttft(double seconds);
  void observe_itl(double seconds);
  /// One decode step that gave ids to `rows` sequences (the engine worker).
  void observe_decode_rows(uint64_t rows);
  /// The exposition text with `g` as the gauges.
  std::string render(const EngineGauges& g) const;

 private:
  mutable std::mutex mutex_;
  std::map<int, uint64_t> requests_;  ///< by HTTP status
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0, cached_prompt_tokens_ = 0;
  Histogram ttft_, itl_, decode_rows_;
};

}  // namespace kern::run::serve
