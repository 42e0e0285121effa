// The speculative part of kern-run's reports (--spec; docs/speculative.md):
// a text line and the JSON object `spec`.
#pragma once

#include <string>
#include <vector>

#include "kern-engine/spec_stats.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {

/// "speculative: R rounds of block B, T tokens/round, acceptance A%, ms/round
/// draft D verify V precompute P[, F plain steps after the capacity]\n".
std::string spec_stats_line(const engine::SpecStats& s);

/// Writes key "spec" and its object: `block`, `rounds`, `tokens_per_round`
/// (mean of accepted + 1), `acceptance_rate` (accepted / drafted),
/// `accepted_per_round` and `emitted_per_round` (arrays, one entry per
/// round), `ms_per_round` {draft, verify, precompute, total} (means),
/// `prompt_precompute_ms`, `fallback_steps`.
void write_spec_json(rapidjson::Writer<rapidjson::StringBuffer>& w, const engine::SpecStats& s);

}  // namespace kern::run
