// The batched-decode caller contract of a plan (docs/batching.md): the
// `decode_batch` program, the `batch` symbol (its max is the plan's
// max_batch) and the five batch buffers the engine writes when the batch
// composition changes, resolved and checked once; and whether
// `decode_batch` samples (its sampling dispatch reads the per-row sampling
// inputs, docs/causal-lm-manifest.md "Sampling"). A plan without `decode_batch`
// has no batch contract (the engine then runs one sequence at a time).
#pragma once

#include <cstdint>
#include <optional>

#include "common/result.h"
#include "kern-engine/causal_lm_contract.h"
#include "kern-load/plan_file.h"

namespace kern::engine {

/// Indices into the plan and the batch bound.
struct BatchContract {
  uint32_t decode_batch = 0;   ///< Plan.programs index of `decode_batch`
  uint32_t batch_symbol = 0;   ///< Plan.symbols index of `batch`
  uint64_t max_batch = 0;      ///< the `batch` symbol's max: sequences per step at most
  // Plan.buffers indices; row r belongs to the sequence in batch slot r.
  uint32_t token_ids = 0;      ///< i64 [batch] carry
  uint32_t positions = 0;      ///< i64 [batch] carry
  uint32_t slot_mapping = 0;   ///< i64 [batch] carry
  uint32_t seq_lens = 0;       ///< i32 [batch] carry (<= 0: a free slot)
  uint32_t block_tables = 0;   ///< i32 [batch, pages_per_seq] input, -1 padded
  uint64_t pages_per_seq = 0;  ///< a row's entries (= the causal-LM contract's block_table_pages)
  /// decode_batch reads the sampling inputs (sample_temperature ..., row r
  /// for batch row r): sampled requests may join. false: a plan whose
  /// decode_batch predates its sampling dispatch (greedy only).
  bool samples = false;
};

/// Resolves the contract of a plan whose causal-LM contract is `c`: none (an
/// empty optional) when the plan has no program `decode_batch`. Errors
/// (kManifest) name what is wrong: `decode_batch` without a `batch` symbol,
/// a missing batch buffer, a wrong dtype / shape / class, a table row width
/// other than block_table's pages, a sampling decode_batch whose sampling
/// inputs have fewer rows than max_batch.
Result<std::optional<BatchContract>> resolve_batch_contract(const load::PlanFile& plan, const CausalLmContract& c);

}  // namespace kern::engine
