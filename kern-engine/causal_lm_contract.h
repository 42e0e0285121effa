// The causal-LM caller contract of a plan (SPEC §7, docs/causal-lm-manifest.md):
// which programs, buffers and symbol the engine drives, resolved to indices
// once, with their dtypes and shapes checked, so the generation loop never
// looks up a name.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/result.h"
#include "kern-load/plan_file.h"

namespace kern::engine {

/// KV cache page size in tokens (docs/kernels.md: paged, block size 16).
inline constexpr uint64_t kKvBlockTokens = 16;

/// Indices into the plan and the sizes the engine needs.
struct CausalLmContract {
  uint32_t prefill = 0;  ///< Plan.programs index of `prefill`
  uint32_t decode = 0;   ///< Plan.programs index of `decode`
  /// Plan.programs index of `prefill_last` (the last prefill chunk, ending in
  /// its last row's next token and the first decode step's carries;
  /// docs/causal-lm-manifest.md "prefill_last"), or kNoProgram: an older plan,
  /// whose first id comes from a decode step of the last prompt token.
  uint32_t prefill_last = kNoProgram;
  static constexpr uint32_t kNoProgram = UINT32_MAX;
  bool has_prefill_last() const { return prefill_last != kNoProgram; }
  /// Whether a prompt of `prompt_tokens` ids gets its first id from
  /// prefill_last: the plan has it and the prompt has at least 2 ids. A
  /// one-id prompt has nothing else to prefill, so its first id comes from
  /// a decode step, as with an older plan: prefill_last at one row would run
  /// the prefill kernels for that row alone (every weight read once more
  /// per request), where the batched engine's decode_batch step reads them
  /// once for all its rows. A function of the request alone, so every
  /// caller takes the same path and a sequence's ids do not depend on what
  /// runs beside it.
  bool prefill_last_for(uint64_t prompt_tokens) const { return has_prefill_last() && prompt_tokens >= 2; }
  uint32_t tokens_symbol = 0;  ///< Plan.symbols index of `tokens`
  /// Plan.symbols index of `batch` (the batched decode's sequences,
  /// docs/batching.md), or kNoSymbol when the plan has none; every other
  /// program runs at batch = 1.
  uint32_t batch_symbol = kNoSymbol;
  static constexpr uint32_t kNoSymbol = UINT32_MAX;
  uint64_t tokens_max = 0;     ///< its upper bound: the largest prefill chunk
  uint64_t tokens_min = 0;
  // Plan.buffers indices.
  uint32_t token_ids = 0;     ///< i64 [tokens] carry (decode writes the next step's)
  uint32_t positions = 0;     ///< i64 [tokens] carry (decode writes the next step's)
  uint32_t slot_mapping = 0;  ///< i64 [tokens] carry (decode writes the next step's)
  uint32_t seq_lens = 0;      ///< i32 [1] carry (decode advances it)
  uint32_t cu_seqlens_q = 0;  ///< i32 [2] input
  uint32_t block_table = 0;   ///< i32 [max_pages] input
  uint32_t next_token = 0;    ///< i64 [tokens] output
  uint32_t logits = 0;        ///< [tokens or R, vocab] workspace; kNoBuffer when the plan has none (optional)
  static constexpr uint32_t kNoBuffer = UINT32_MAX;
  uint64_t block_table_pages = 0;  ///< max_pages (block_table's constant length)
  uint64_t vocab = 0;  ///< model.embed_tokens.weight's rows (= logits' last dimension when present): valid ids are [0, vocab)
  /// The per-row sampling inputs (docs/causal-lm-manifest.md "Sampling"):
  /// f32 / i32 / f32 / f32 / i64 [sampling_rows] inputs read by `decode`'s
  /// sample dispatch. sampling_rows = 0: the plan has none (an older
  /// manifest; only greedy decoding runs).
  uint32_t sample_temperature = 0, sample_top_k = 0, sample_top_p = 0, sample_min_p = 0, sample_seed = 0;
  uint64_t sampling_rows = 0;
  /// Rows of the RoPE table `rope.cos_sin_cache` (f32 [max_position_embeddings, D]): positions
  /// [0, rope_positions) have a rotation; 0 when the plan has no such buffer (no bound).
  uint64_t rope_positions = 0;

  /// Tokens the block table can address: the most KV capacity (block_table_pages x kKvBlockTokens).
  uint64_t table_tokens() const { return kKvBlockTokens * block_table_pages; }
  /// The most KV capacity a sequence can use: the block table's tokens, and
  /// no more positions than the RoPE table has rows (a position past them
  /// would read beyond the cos/sin cache).
  uint64_t max_capacity() const {
    return rope_positions == 0 ? table_tokens() : std::min(table_tokens(), rope_positions);
  }
  /// The prefill chunk actually run for a requested `chunk`: at least 1, at most the `tokens` bound.
  uint64_t clamp_chunk(uint64_t chunk) const { return std::max<uint64_t>(1, std::min(chunk, tokens_max)); }
};

/// Resolves the contract. Errors (kManifest), naming what is missing or
/// wrong: a missing program `prefill`/`decode`; a missing buffer (`logits`
/// is optional: kern-run never reads it); a buffer
/// with the wrong dtype or shape ("buffer 'seq_lens' has dtype i64, the qwen3
/// contract needs i32"); an embedding whose rows differ from the logits'
/// columns; no `tokens` symbol, or a symbol other than `tokens` and `batch`
/// (kern-run cannot choose its value); a `batch` symbol whose min is not 1;
/// a `rope.cos_sin_cache` that is not f32 [N, D]; some but not all of the
/// sampling inputs, or one of the wrong dtype, shape ([N], N the same for
/// all) or class (input).
Result<CausalLmContract> resolve_causal_lm_contract(const load::PlanFile& plan);

}  // namespace kern::engine
