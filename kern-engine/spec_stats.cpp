// SpecStats' summary figures (spec_stats.h).
#include "kern-engine/spec_stats.h"

namespace kern::engine {

namespace {

template <typename F>
double mean_over(const std::vector<SpecRound>& rounds, F value) {
  if (rounds.empty()) return 0.0;
  double sum = 0.0;
  for (const SpecRound& r : rounds) sum += value(r);
  return sum / static_cast<double>(rounds.size());
}

}  // namespace

void SpecStats::merge(const SpecStats& other) {
  block = other.block;
  rounds.insert(rounds.end(), other.rounds.begin(), other.rounds.end());
  fallback_steps += other.fallback_steps;
  prompt_precompute_ms += other.prompt_precompute_ms;
}

double SpecStats::tokens_per_round() const {
  return mean_over(rounds, [](const SpecRound& r) { return static_cast<double>(r.accepted + 1); });
}

double SpecStats::acceptance_rate() const {
  if (rounds.empty() || block < 2) return 0.0;
  double accepted = 0.0;
  for (const SpecRound& r : rounds) accepted += static_cast<double>(r.accepted);
  return accepted / (static_cast<double>(rounds.size()) * static_cast<double>(block - 1));
}

double SpecStats::mean_draft_ms() const { return mean_over(rounds, [](const SpecRound& r) { return r.draft_ms; }); }
double SpecStats::mean_verify_ms() const { return mean_over(rounds, [](const SpecRound& r) { return r.verify_ms; }); }
double SpecStats::mean_precompute_ms() const {
  return mean_over(rounds, [](const SpecRound& r) { return r.precompute_ms; });
}

}  // namespace kern::engine
