// The speculative-decoding caller contract of a plan (SPEC §8,
// docs/speculative.md): the four programs and two buffers a DSpark round
// drives besides the causal-LM contract's, and the plan's `spec` (block, mask
// token), resolved and checked once.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "kern-load/plan_file.h"
#include "kern-engine/causal_lm_contract.h"

namespace kern::engine {

/// Indices into the plan and the values of its meta.spec.
struct SpecContract {
  uint32_t decode_spec = 0;       ///< Plan.programs: decode + taps (the last prompt token)
  uint32_t verify = 0;            ///< target over `block` rows + taps, `block` predictions
  uint32_t draft = 0;             ///< the DFlash pass + Markov chain
  uint32_t draft_precompute = 0;  ///< tapped rows -> draft KV
  uint32_t draft_ids = 0;         ///< Plan.buffers: i64 [tokens] input (anchor, mask, ...)
  uint32_t draft_tokens = 0;      ///< i64 [block - 1] output (the drafted ids)
  uint64_t block = 0;             ///< rows per draft / verify call (2 .. tokens max)
  int64_t mask_token = 0;         ///< id of the draft's rows 1 .. block - 1, in [0, vocab)
};

/// Resolves the contract of a plan whose causal-LM contract is `c`. Errors
/// (kManifest) name what is missing or wrong: no `spec` in the plan (not a
/// speculative manifest: generate one with examples/gen_qwen3_dspark_manifest.py),
/// a missing program or buffer, a wrong dtype / shape / class, a block outside
/// [2, tokens max] or a mask token outside [0, vocab).
Result<SpecContract> resolve_spec_contract(const load::PlanFile& plan, const CausalLmContract& c);

}  // namespace kern::engine
