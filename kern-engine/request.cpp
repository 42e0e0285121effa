// Request and capacity checks (request.h).
#include "kern-engine/request.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

namespace kern::engine {

namespace {

Error usage(const std::string& m) { return make_error(ErrorKind::kUsage, m); }

/// A float as a user wrote it ("0.5", not to_string's "0.500000").
std::string num(float v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

Status check_token_ids(std::span<const int64_t> ids, uint64_t vocab, const std::string& what) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || static_cast<uint64_t>(ids[i]) >= vocab)
      return usage(what + " id " + std::to_string(ids[i]) + " at index " + std::to_string(i) +
                   " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  return {};
}

uint64_t default_capacity(const CausalLmContract& c) { return std::min(kDefaultCapacityCap, c.max_capacity()); }

Status check_capacity(const CausalLmContract& c, uint64_t capacity) {
  if (capacity == 0) return usage("the capacity must be at least 1 token");
  const uint64_t table_tokens = c.table_tokens();
  if (capacity > table_tokens)
    return usage("capacity " + std::to_string(capacity) + " tokens exceeds the block table (" +
                 std::to_string(c.block_table_pages) + " pages x " + std::to_string(kKvBlockTokens) + " = " +
                 std::to_string(table_tokens) + " tokens)");
  if (c.rope_positions != 0 && capacity > c.rope_positions)
    return usage("capacity " + std::to_string(capacity) + " tokens exceeds the RoPE table (" +
                 std::to_string(c.rope_positions) + " positions: rope.cos_sin_cache rows, the model's "
                 "max_position_embeddings)");
  if (capacity > static_cast<uint64_t>(INT32_MAX)) return usage("capacity exceeds the i32 range of seq_lens");
  return {};
}

Status check_sampling(const SamplingParams& p) {
  if (!(p.temperature >= 0.0f) || std::isinf(p.temperature))
    return usage("temperature " + num(p.temperature) + " must be a finite number >= 0");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return usage("top_p " + num(p.top_p) + " must be in (0, 1]");
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return usage("min_p " + num(p.min_p) + " must be in [0, 1]");
  return {};
}

Status check_request(const CausalLmContract& c, uint64_t capacity, const Request& r) {
  if (r.prompt_ids.empty()) return usage("the prompt is empty");
  if (r.max_tokens == 0) return usage("the number of ids to generate must be at least 1");
  if (r.chunk == 0) return usage("the prefill chunk must be at least 1 token");
  if (Status s = check_token_ids(r.prompt_ids, c.vocab, "prompt"); !s.ok())
    return usage(s.error().message + " (the embedding's rows)");
  KERN_RETURN_IF_ERROR(check_token_ids(r.stop_ids, c.vocab, "stop"));
  KERN_RETURN_IF_ERROR(check_sampling(r.sampling));
  if (!r.sampling.greedy() && r.speculative)
    return usage("speculative decoding is greedy only: temperature " + num(r.sampling.temperature) +
                 " asks for sampling (use temperature 0, or plain decoding)");
  if (!r.sampling.greedy() && c.sampling_rows == 0)
    return usage("sampling (temperature " + num(r.sampling.temperature) +
                 ") needs a plan whose decode program samples; this one has no sampling inputs "
                 "(sample_temperature ...): regenerate its manifest with examples/gen_qwen3_manifest.py");
  // prompt + steps > capacity, without overflowing u64 (--steps 18446744073709551612).
  const uint64_t n = r.prompt_ids.size();
  if (r.max_tokens > capacity || n > capacity - r.max_tokens) {
    const bool sum_fits = n <= UINT64_MAX - r.max_tokens;
    return usage("prompt (" + std::to_string(n) + " tokens) + steps (" + std::to_string(r.max_tokens) + ")" +
                 (sum_fits ? " = " + std::to_string(n + r.max_tokens) + " tokens" : "") +
                 " exceeds the capacity " + std::to_string(capacity) + " tokens");
  }
  return {};
}

}  // namespace kern::engine
