// What the engine is asked to generate (a request in token ids, greedy) and
// the checks every request and capacity pass before anything runs. Messages
// name the request's fields, never a command-line flag: the caller (kern-run)
// adds its flag names as context.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-engine/causal_lm_contract.h"

namespace kern::engine {

/// Identifies a request inside one Engine (the caller chooses it).
using RequestId = uint64_t;

/// Default prefill chunk in tokens (clamped to the `tokens` bound).
inline constexpr uint64_t kDefaultChunk = 512;
/// Default capacity cap in tokens: capacity = min(this, contract max_capacity()).
inline constexpr uint64_t kDefaultCapacityCap = 4096;

/// How a request picks each generated id from the logits (the OpenAI/vLLM
/// fields). temperature 0 is greedy argmax (the decode program's argmax,
/// bit for bit); otherwise the decode program's sample dispatch
/// (docs/kernels.md §17) divides the logits by temperature, keeps the ids
/// min_p (0: off) and top_k (0: off) keep, then top_p (1: off) of those
/// (ids tied at a cut stay), and draws from Philox4x32-10 keyed by (seed,
/// the token's position), so a seeded sequence samples the same ids alone
/// or in any batch. The engine does not choose seeds: a caller without one
/// picks it (kern-run: from std::random_device, reported).
struct SamplingParams {
  float temperature = 0.0f;  ///< >= 0; 0 = greedy
  uint32_t top_k = 0;        ///< keep the k most likely ids (and ids tied with the k-th); 0 = all
  float top_p = 1.0f;        ///< (0, 1]: keep the smallest set (whole ties) whose probability reaches top_p
  float min_p = 0.0f;        ///< [0, 1]: drop ids below min_p x the top probability
  uint64_t seed = 0;         ///< generator key (with the position)
  /// Greedy: every id is the argmax of its logits.
  bool greedy() const { return temperature == 0.0f; }
  bool operator==(const SamplingParams&) const = default;
};

/// One generation.
struct Request {
  RequestId id = 0;
  std::vector<int64_t> prompt_ids;
  uint64_t max_tokens = 0;         ///< most generated ids wanted (>= 1)
  std::vector<int64_t> stop_ids;   ///< generation ends after producing one of these (kept in the output)
  uint64_t chunk = kDefaultChunk;  ///< prefill chunk in tokens (>= 1; clamped to the tokens bound)
  /// true: the synchronous decode loop (host writes each step's inputs and
  /// waits for its token before the next step); false: the asynchronous
  /// one (model_runner.h). Both give the same ids.
  bool sync = false;
  /// Speculative decoding with the model's DSpark draft (SPEC §8; the Model
  /// must have a SpecContract). Gives the same ids as plain greedy decoding.
  bool speculative = false;
  /// How ids are picked (greedy by default).
  SamplingParams sampling{};
};

/// Whether `id` is one of `stop_ids` (generation ends after producing it).
inline bool is_stop_id(std::span<const int64_t> stop_ids, int64_t id) {
  for (int64_t s : stop_ids)
    if (s == id) return true;
  return false;
}

/// Checks that every id is a token of the vocabulary [0, vocab). Errors
/// (kUsage): "<what> id X at index I is outside the vocabulary [0, V)".
Status check_token_ids(std::span<const int64_t> ids, uint64_t vocab, const std::string& what);

/// The default capacity of a contract: min(4096, the block table's tokens,
/// the RoPE table's rows).
uint64_t default_capacity(const CausalLmContract& c);

/// Checks a capacity in tokens against the contract. Errors (kUsage):
/// 0; more than the block table addresses ("capacity 1040 tokens exceeds the
/// block table (64 pages x 16 = 1024 tokens)"); more positions than the RoPE
/// table has rows; beyond the i32 range of seq_lens.
Status check_capacity(const CausalLmContract& c, uint64_t capacity);

/// Checks sampling parameters. Errors (kUsage): temperature negative, NaN or
/// infinite; top_p outside (0, 1]; min_p outside [0, 1].
Status check_sampling(const SamplingParams& p);

/// Checks a request for a model of contract `c` loaded at `capacity`
/// tokens before anything runs. Errors (kUsage): an empty prompt; max_tokens
/// 0; chunk 0; a prompt id outside [0, vocab) (vocab = the `logits` buffer's
/// last dimension = the embedding's rows; names the index and the id); a
/// stop id outside [0, vocab) ("stop id 256 at index 0 is outside the
/// vocabulary [0, 256)"); check_sampling's; sampling (temperature > 0) with
/// a plan whose decode program does not sample (no sampling inputs), or
/// with speculative decoding (which stays greedy); prompt + max_tokens >
/// capacity (names them, without wrapping u64).
Status check_request(const CausalLmContract& c, uint64_t capacity, const Request& r);

}  // namespace kern::engine
