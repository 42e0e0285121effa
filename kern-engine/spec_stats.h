// Figures of a speculative generation (SPEC §8, docs/speculative.md): one
// record per round (draft -> verify -> accept -> precompute), plain data
// shared by the round (engine.h) and the reports.
#pragma once

#include <cstdint>
#include <vector>

namespace kern::engine {

/// One round. Times are host wall milliseconds (steady clock) of each phase
/// including its input writes and readback (so on a GPU they include the
/// device time: the readback waits for it).
struct SpecRound {
  uint64_t accepted = 0;  ///< drafted tokens accepted: the longest prefix with prediction == draft (0 .. block-1)
  uint64_t emitted = 0;   ///< ids this round added to the output: accepted + 1, fewer when a stop id or --steps cut it
  double draft_ms = 0;
  double verify_ms = 0;
  double precompute_ms = 0;  ///< 0 when the round ended generation (nothing to precompute)
};

/// A whole speculative generation.
struct SpecStats {
  uint64_t block = 0;              ///< rows per draft / verify (block - 1 drafted tokens per round)
  std::vector<SpecRound> rounds;
  uint64_t fallback_steps = 0;     ///< plain decode steps after a block would have crossed the capacity
  double prompt_precompute_ms = 0; ///< draft_precompute of the prompt rows (inside time to first token)

  /// Adds another generation's rounds, fallback steps and precompute time
  /// (kern-run bench sums its timed repetitions); `block` becomes other's.
  void merge(const SpecStats& other);

  /// Mean of accepted + 1 over the rounds (the verify's yield; 0 without rounds).
  double tokens_per_round() const;
  /// Accepted drafted tokens / drafted tokens (block - 1 per round; 0 without rounds).
  double acceptance_rate() const;
  /// Mean ms per round of draft / verify / precompute / their sum (0 without rounds).
  double mean_draft_ms() const;
  double mean_verify_ms() const;
  double mean_precompute_ms() const;
};

}  // namespace kern::engine
