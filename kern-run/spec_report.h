// The speculative part of kern-run's reports (--spec; docs/speculative.md):
// a text line and the JSON object `spec`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kern-engine/spec_stats.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {

/// "speculative: R rounds of block B, T tokens/round, acceptance A%, ms/round
/// draft D verify V precompute P[, F plain steps after the capacity]\n".
std::string spec_stats_line(const engine::SpecStats& s);

/// Acceptance below this (of drafted tokens) is "near zero": the draft
/// predicts almost none of the target's ids (a trained DSpark draft accepts
/// about 2.4 of 7 per round, SPEC §8's 3.44 tokens per round).
inline constexpr double kNearZeroAcceptance = 0.05;

/// The note for a near-zero acceptance (after at least one round), else "":
/// with `random_weights` (--random-weights, or a weights file written by
/// gen_random_weights.py) "note: acceptance is near zero because the draft's
/// weights are random ...", otherwise that the draft's weights are random or
/// trained for another target. One line, no trailing newline.
std::string spec_acceptance_note(const engine::SpecStats& s, bool random_weights);

/// Writes key "spec" and its object: `block`, `rounds`, `tokens_per_round`
/// (mean of accepted + 1), `acceptance_rate` (accepted / drafted),
/// `accepted_per_round` and `emitted_per_round` (arrays, one entry per
/// round), `ms_per_round` {draft, verify, precompute, total} (means),
/// `prompt_precompute_ms`, `fallback_steps`, and `acceptance_note`
/// (spec_acceptance_note's text, or null; only when `random_weights` is
/// given: kern-run bench leaves it out).
void write_spec_json(rapidjson::Writer<rapidjson::StringBuffer>& w, const engine::SpecStats& s,
                     std::optional<bool> random_weights = std::nullopt);

}  // namespace kern::run
