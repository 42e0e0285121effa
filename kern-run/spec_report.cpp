// Text and JSON of a speculative generation's figures (spec_report.h).
#include "kern-run/spec_report.h"

#include "kern-run/number_text.h"

namespace kern::run {

std::string spec_stats_line(const engine::SpecStats& s) {
  std::string out = "speculative: " + std::to_string(s.rounds.size()) + " rounds of block " + std::to_string(s.block) +
                    ", " + format_double("%.2f", s.tokens_per_round()) + " tokens/round, acceptance " +
                    format_double("%.1f", 100.0 * s.acceptance_rate()) + "%, ms/round draft " +
                    format_double("%.3f", s.mean_draft_ms()) + " verify " + format_double("%.3f", s.mean_verify_ms()) +
                    " precompute " + format_double("%.3f", s.mean_precompute_ms());
  if (s.fallback_steps > 0)
    out += ", " + std::to_string(s.fallback_steps) + " plain steps after the capacity";
  return out + "\n";
}

std::string spec_acceptance_note(const engine::SpecStats& s, bool random_weights) {
  if (s.rounds.empty() || s.acceptance_rate() >= kNearZeroAcceptance) return "";
  const std::string cost = "each round then yields about one token for a draft and a verify, so speculation is "
                           "slower than plain decoding";
  if (random_weights)
    return "note: acceptance is near zero because the draft's weights are random (--random-weights or "
           "gen_random_weights.py): " + cost + "; a trained DSpark draft accepts ~3.4 tokens per round";
  return "note: acceptance is near zero: the draft predicts almost none of the target's tokens; " + cost +
         " (are the draft's weights random, or trained for another target model? docs/speculative.md)";
}

void write_spec_json(rapidjson::Writer<rapidjson::StringBuffer>& w, const engine::SpecStats& s,
                     std::optional<bool> random_weights) {
  w.Key("spec");
  w.StartObject();
  w.Key("block");
  w.Uint64(s.block);
  w.Key("rounds");
  w.Uint64(s.rounds.size());
  w.Key("tokens_per_round");
  w.Double(s.tokens_per_round());
  w.Key("acceptance_rate");
  w.Double(s.acceptance_rate());
  w.Key("accepted_per_round");
  w.StartArray();
  for (const engine::SpecRound& r : s.rounds) w.Uint64(r.accepted);
  w.EndArray();
  w.Key("emitted_per_round");
  w.StartArray();
  for (const engine::SpecRound& r : s.rounds) w.Uint64(r.emitted);
  w.EndArray();
  w.Key("ms_per_round");
  w.StartObject();
  w.Key("draft");
  w.Double(s.mean_draft_ms());
  w.Key("verify");
  w.Double(s.mean_verify_ms());
  w.Key("precompute");
  w.Double(s.mean_precompute_ms());
  w.Key("total");
  w.Double(s.mean_draft_ms() + s.mean_verify_ms() + s.mean_precompute_ms());
  w.EndObject();
  w.Key("prompt_precompute_ms");
  w.Double(s.prompt_precompute_ms);
  w.Key("fallback_steps");
  w.Uint64(s.fallback_steps);
  if (random_weights) {
    const std::string note = spec_acceptance_note(s, *random_weights);
    w.Key("acceptance_note");
    if (note.empty()) w.Null();
    else w.String(note.data(), static_cast<rapidjson::SizeType>(note.size()));
  }
  w.EndObject();
}

}  // namespace kern::run
