// Prometheus text for kern-run serve (metrics.h).
#include "kern-run/serve/metrics.h"

#include <algorithm>
#include <cstdio>

namespace kern::run::serve {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void gauge(std::string& out, const char* name, const char* help, uint64_t v) {
  header(out, name, "gauge", help);
  out += std::string(name) + " " + std::to_string(v) + "\n";
}

/// A label value in the exposition format: backslash, double quote and
/// line feed escaped.
std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

/// The per-rank families: memory by class, peak resident memory, the
/// device, and the collectives where the rank counts them.
void render_ranks(const std::vector<RankFigures>& ranks, std::string& out) {
  auto known = [](const RankFigures& f) { return !f.device.empty(); };
  auto rank_label = [](const RankFigures& f) { return "rank=\"" + std::to_string(f.rank) + "\""; };
  header(out, "kern_rank_info", "gauge", "The device each rank runs on (value 1).");
  for (const RankFigures& f : ranks)
    if (known(f)) out += "kern_rank_info{" + rank_label(f) + ",device=\"" + label_value(f.device) + "\"} 1\n";
  header(out, "kern_memory_bytes", "gauge",
         "Device memory a rank's loaded plan holds, by class: weights, states at the capacity, the workspace "
         "arena, io buffers, and their total.");
  for (const RankFigures& f : ranks) {
    if (!known(f)) continue;
    const std::pair<const char*, uint64_t> classes[] = {
        {"weights", f.weights}, {"states", f.states}, {"arena", f.arena}, {"io", f.io}, {"total", f.total}};
    for (const auto& [name, bytes] : classes)
      out += "kern_memory_bytes{" + rank_label(f) + ",class=\"" + name + "\"} " + std::to_string(bytes) + "\n";
  }
  header(out, "kern_peak_resident_bytes", "gauge", "A rank process's peak resident memory (getrusage).");
  for (const RankFigures& f : ranks)
    if (known(f)) out += "kern_peak_resident_bytes{" + rank_label(f) + "} " + std::to_string(f.peak_rss) + "\n";
  const bool any_collective =
      std::any_of(ranks.begin(), ranks.end(), [&](const RankFigures& f) { return known(f) && f.collective; });
  if (!any_collective) return;
  header(out, "kern_collective_calls_total", "counter", "All-gathers a rank ran (tensor parallelism).");
  for (const RankFigures& f : ranks)
    if (known(f) && f.collective)
      out += "kern_collective_calls_total{" + rank_label(f) + "} " + std::to_string(f.collective->calls) + "\n";
  header(out, "kern_collective_bytes_sent_total", "counter", "Bytes a rank sent to its peers in all-gathers.");
  for (const RankFigures& f : ranks)
    if (known(f) && f.collective)
      out += "kern_collective_bytes_sent_total{" + rank_label(f) + "} " + std::to_string(f.collective->bytes_sent) +
             "\n";
  header(out, "kern_collective_seconds_total", "counter",
         "Wall time a rank spent inside all-gathers (the transfer and waiting for its peers).");
  for (const RankFigures& f : ranks)
    if (known(f) && f.collective)
      out += "kern_collective_seconds_total{" + rank_label(f) + "} " + number(f.collective->wait_ms / 1e3) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(const std::string& name, std::string& out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

std::vector<double> batch_row_bounds(uint64_t max_batch) {
  std::vector<double> b;
  const uint64_t top = max_batch > 0 ? max_batch : 1;
  for (uint64_t r = 1; r <= top && r <= 16; ++r) b.push_back(static_cast<double>(r));
  for (uint64_t r = 32; r < top; r *= 2) b.push_back(static_cast<double>(r));
  if (top > 16) b.push_back(static_cast<double>(top));
  return b;
}

Metrics::Metrics(uint64_t max_batch)
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1,
            2.5, 5}),
      decode_rows_(batch_row_bounds(max_batch)) {}

void Metrics::count_request(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[status];
}

void Metrics::add_tokens(uint64_t prompt, uint64_t generated, uint64_t cached) {
  std::lock_guard<std::mutex> lock(mutex_);
  prompt_tokens_ += prompt;
  cached_prompt_tokens_ += std::min(cached, prompt);
  generated_tokens_ += generated;
}

void Metrics::observe_ttft(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ttft_.observe(seconds);
}

void Metrics::observe_itl(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  itl_.observe(seconds);
}

void Metrics::observe_decode_rows(uint64_t rows) {
  std::lock_guard<std::mutex> lock(mutex_);
  decode_rows_.observe(static_cast<double>(rows));
}

std::string Metrics::render(const EngineGauges& g) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  header(out, "kern_requests_total", "counter", "Generation requests answered, by HTTP status.");
  for (const auto& [status, n] : requests_)
    out += "kern_requests_total{status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  header(out, "kern_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.");
  out += "kern_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  header(out, "kern_prompt_tokens_cached_total", "counter",
         "Prompt tokens mapped from the prefix cache (hits): not prefilled.");
  out += "kern_prompt_tokens_cached_total " + std::to_string(cached_prompt_tokens_) + "\n";
  header(out, "kern_prompt_tokens_computed_total", "counter",
         "Prompt tokens computed (misses): prefilled, or the last one through decode.");
  out += "kern_prompt_tokens_computed_total " + std::to_string(prompt_tokens_ - cached_prompt_tokens_) + "\n";
  header(out, "kern_generation_tokens_total", "counter", "Tokens generated.");
  out += "kern_generation_tokens_total " + std::to_string(generated_tokens_) + "\n";
  header(out, "kern_time_to_first_token_seconds", "histogram", "Time from arrival to the first generated token.");
  ttft_.render("kern_time_to_first_token_seconds", out);
  header(out, "kern_inter_token_latency_seconds", "histogram", "Time between consecutive generated tokens.");
  itl_.render("kern_inter_token_latency_seconds", out);
  gauge(out, "kern_requests_running", "Requests admitted by the engine at its last step, not finished.", g.running);
  gauge(out, "kern_requests_waiting", "Requests queued before the engine or handed to it for its next step.", g.waiting);
  gauge(out, "kern_kv_pages_used",
        "KV cache pages reserved by unfinished sequences (prompt + max_tokens each; a shared page once).",
        g.kv_pages_used);
  gauge(out, "kern_kv_pages_free", "KV cache pages free, cached pages no sequence holds included.",
        g.kv_pages_total - g.kv_pages_used);
  gauge(out, "kern_kv_pages_cached",
        "KV cache pages holding a prefix cache entry (held by a sequence or not: the unheld ones count as free).",
        g.kv_pages_cached);
  header(out, "kern_prefix_cache_evictions_total", "counter",
         "Cached KV pages taken for other tokens when the pool needed them (least recently used first).");
  out += "kern_prefix_cache_evictions_total " + std::to_string(g.prefix_cache_evictions) + "\n";
  header(out, "kern_prefix_cache_reprefilled_tokens_total", "counter",
         "Positions of finished requests that decode wrote, prefilled again before their pages were cached.");
  out += "kern_prefix_cache_reprefilled_tokens_total " + std::to_string(g.prefix_cache_reprefilled_tokens) + "\n";
  header(out, "kern_prefix_cache_reprefills_pending", "gauge",
         "Finished requests whose decode-written pages still wait to be prefilled again (0: caught up).");
  out += "kern_prefix_cache_reprefills_pending " + std::to_string(g.prefix_cache_reprefills_pending) + "\n";
  header(out, "kern_decode_batch_rows", "histogram",
         "Sequences per decode step (batch occupancy: _sum / _count is the mean rows per step).");
  decode_rows_.render("kern_decode_batch_rows", out);
  gauge(out, "kern_decode_batch_size", "Rows of the last decode step (0 when nothing runs).", g.batch_size);
  gauge(out, "kern_max_batch", "The most sequences decoded at once (--max-batch).", g.max_batch);
  if (!g.ranks.empty()) render_ranks(g.ranks, out);
  return out;
}

}  // namespace kern::run::serve
