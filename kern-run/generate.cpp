#include "kern-run/generate.h"
#include "kern-run/stopwatch.h"

#include "kern-run/qwen3_driver.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

namespace kern::run {

uint64_t default_capacity(const Qwen3Contract& c) {
  return std::min(kDefaultCapacityCap, kKvBlockTokens * c.block_table_pages);
}

Status check_request(const Qwen3Contract& c, const GenerateRequest& r) {
  auto usage = [](const std::string& m) { return make_error(ErrorKind::kUsage, m); };
  if (r.prompt_ids.empty()) return usage("the prompt is empty: give a prompt (--prompt, --prompt-file, stdin or --prompt-ids)");
  if (r.steps == 0) return usage("--steps must be at least 1");
  if (r.chunk == 0) return usage("--chunk must be at least 1");
  for (size_t i = 0; i < r.prompt_ids.size(); ++i)
    if (r.prompt_ids[i] < 0 || static_cast<uint64_t>(r.prompt_ids[i]) >= c.vocab)
      return usage("prompt id " + std::to_string(r.prompt_ids[i]) + " at index " + std::to_string(i) +
                   " is outside the vocabulary [0, " + std::to_string(c.vocab) + ") (the embedding's rows)");
  uint64_t table_tokens = kKvBlockTokens * c.block_table_pages;
  if (r.capacity == 0) return usage("--capacity must be at least 1");
  if (r.capacity > table_tokens)
    return usage("capacity " + std::to_string(r.capacity) + " tokens exceeds the block table (" +
                 std::to_string(c.block_table_pages) + " pages x " + std::to_string(kKvBlockTokens) + " = " +
                 std::to_string(table_tokens) + " tokens)");
  // prompt + steps > capacity, without overflowing u64 (--steps 18446744073709551612).
  const uint64_t n = r.prompt_ids.size();
  if (r.steps > r.capacity || n > r.capacity - r.steps) {
    const bool sum_fits = n <= UINT64_MAX - r.steps;
    return usage("prompt (" + std::to_string(n) + " tokens) + steps (" + std::to_string(r.steps) + ")" +
                 (sum_fits ? " = " + std::to_string(n + r.steps) + " tokens" : "") + " exceeds the capacity " +
                 std::to_string(r.capacity) + " tokens");
  }
  if (r.capacity > static_cast<uint64_t>(INT32_MAX)) return usage("capacity exceeds the i32 range of seq_lens");
  return {};
}

Result<GenerateResult> generate(load::Executable& exe, const Qwen3Contract& c, const GenerateRequest& r) {
  KERN_RETURN_IF_ERROR(check_request(c, r));
  GenerateResult out;
  Qwen3Driver driver(exe, c, r.chunk);
  out.chunk = driver.chunk();
  out.generated_ids.reserve(r.steps);
  KERN_RETURN_IF_ERROR(driver.write_block_table());
  const uint64_t n = r.prompt_ids.size();
  std::function<void(uint64_t, uint64_t)> progress;
  if (r.observer != nullptr) progress = [&r](uint64_t done, uint64_t total) { r.observer->on_prefill_progress(done, total); };
  auto t0 = Clock::now();
  // Chunked prefill of the first n - 1 tokens: fills the KV cache only.
  auto chunks = driver.prefill(std::span(r.prompt_ids).first(n - 1), 0, r.observer ? &progress : nullptr);
  if (!chunks.ok()) return chunks.error();
  out.prefill_chunks = *chunks;
  // Decode: the last prompt token, then each generated id.
  int64_t token = r.prompt_ids.back();
  Clock::time_point t_decode;
  for (uint64_t step = 0; step < r.steps; ++step) {
    auto next = driver.decode(token, n - 1 + step);
    if (!next.ok()) return next.error();
    out.generated_ids.push_back(*next);
    token = *next;
    if (step == 0) {
      out.prefill_ms = ms_since(t0);
      t_decode = Clock::now();
    }
    if (r.observer != nullptr) {
      r.observer->on_token(token);
      KERN_RETURN_IF_ERROR(r.observer->status());
    }
    if (std::find(r.stop_ids.begin(), r.stop_ids.end(), token) != r.stop_ids.end()) {
      out.stopped = true;
      break;
    }
  }
  out.decode_steps = out.generated_ids.size() - 1;
  out.decode_ms = out.decode_steps > 0 ? ms_since(t_decode) : 0.0;
  return out;
}

}  // namespace kern::run
