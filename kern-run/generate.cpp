#include "kern-run/generate.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

namespace kern::run {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::span<const uint8_t> as_bytes(const void* p, size_t n) { return {static_cast<const uint8_t*>(p), n}; }

/// Reusable host staging for one call's small inputs (no allocation per step).
struct Inputs {
  std::vector<int64_t> token_ids, positions;

  /// Writes token_ids/positions/slot_mapping for `n` tokens starting at
  /// position `pos`, seq_lens = pos + n, and (when `cu`) cu_seqlens_q = [0, n].
  Status write(load::Executable& exe, const Qwen3Contract& c, const int64_t* ids, uint64_t n, uint64_t pos, bool cu) {
    for (uint64_t i = 0; i < n; ++i) {
      token_ids[i] = ids[i];
      positions[i] = static_cast<int64_t>(pos + i);  // identity block table: slot == position
    }
    size_t bytes = n * sizeof(int64_t);
    KERN_RETURN_IF_ERROR(exe.write_input(c.token_ids, as_bytes(token_ids.data(), bytes)));
    KERN_RETURN_IF_ERROR(exe.write_input(c.positions, as_bytes(positions.data(), bytes)));
    KERN_RETURN_IF_ERROR(exe.write_input(c.slot_mapping, as_bytes(positions.data(), bytes)));
    int32_t seq_len = static_cast<int32_t>(pos + n);
    KERN_RETURN_IF_ERROR(exe.write_input(c.seq_lens, as_bytes(&seq_len, sizeof seq_len)));
    if (cu) {
      int32_t cu_seqlens[2] = {0, static_cast<int32_t>(n)};
      KERN_RETURN_IF_ERROR(exe.write_input(c.cu_seqlens_q, as_bytes(cu_seqlens, sizeof cu_seqlens)));
    }
    return {};
  }
};

}  // namespace

uint64_t default_capacity(const Qwen3Contract& c) {
  return std::min(kDefaultCapacityCap, kKvBlockTokens * c.block_table_pages);
}

Status check_request(const Qwen3Contract& c, const GenerateRequest& r) {
  auto usage = [](const std::string& m) { return make_error(ErrorKind::kUsage, m); };
  if (r.prompt_ids.empty()) return usage("the prompt is empty: give at least one token id with --prompt-ids");
  if (r.steps == 0) return usage("--steps must be at least 1");
  if (r.chunk == 0) return usage("--chunk must be at least 1");
  for (size_t i = 0; i < r.prompt_ids.size(); ++i)
    if (r.prompt_ids[i] < 0 || static_cast<uint64_t>(r.prompt_ids[i]) >= c.vocab)
      return usage("prompt id " + std::to_string(r.prompt_ids[i]) + " at index " + std::to_string(i) +
                   " is outside the vocabulary [0, " + std::to_string(c.vocab) + ") (the logits buffer's last dimension)");
  uint64_t table_tokens = kKvBlockTokens * c.block_table_pages;
  if (r.capacity == 0) return usage("--capacity must be at least 1");
  if (r.capacity > table_tokens)
    return usage("capacity " + std::to_string(r.capacity) + " tokens exceeds the block table (" +
                 std::to_string(c.block_table_pages) + " pages x " + std::to_string(kKvBlockTokens) + " = " +
                 std::to_string(table_tokens) + " tokens)");
  if (r.prompt_ids.size() + r.steps > r.capacity)
    return usage("prompt (" + std::to_string(r.prompt_ids.size()) + " tokens) + steps (" + std::to_string(r.steps) +
                 ") = " + std::to_string(r.prompt_ids.size() + r.steps) + " tokens exceeds the capacity " +
                 std::to_string(r.capacity) + " tokens");
  if (r.capacity > static_cast<uint64_t>(INT32_MAX)) return usage("capacity exceeds the i32 range of seq_lens");
  return {};
}

Result<GenerateResult> generate(load::Executable& exe, const Qwen3Contract& c, const GenerateRequest& r) {
  KERN_RETURN_IF_ERROR(check_request(c, r));
  GenerateResult out;
  out.chunk = std::min(r.chunk, c.tokens_max);
  out.generated_ids.reserve(r.steps);

  std::vector<int32_t> table(c.block_table_pages);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  KERN_RETURN_IF_ERROR(exe.write_input(c.block_table, as_bytes(table.data(), table.size() * sizeof(int32_t))));

  Inputs in;
  in.token_ids.resize(std::max<uint64_t>(out.chunk, 1));
  in.positions.resize(in.token_ids.size());
  std::vector<uint64_t> symbols(exe.plan().symbols()->size(), 0);
  const uint64_t n = r.prompt_ids.size();

  auto t0 = Clock::now();
  // Chunked prefill of the first n - 1 tokens: fills the KV cache only.
  for (uint64_t pos = 0; pos + 1 < n; pos += out.chunk) {
    uint64_t len = std::min(out.chunk, n - 1 - pos);
    Status s = in.write(exe, c, r.prompt_ids.data() + pos, len, pos, true);
    symbols[c.tokens_symbol] = len;
    if (s.ok()) s = exe.run_program(c.prefill, symbols);
    if (!s.ok()) return s.error().with_context("prefill chunk at position " + std::to_string(pos));
    ++out.prefill_chunks;
  }
  // Decode: the last prompt token, then each generated id.
  symbols[c.tokens_symbol] = 1;
  const int32_t cu_decode[2] = {0, 1};
  KERN_RETURN_IF_ERROR(exe.write_input(c.cu_seqlens_q, as_bytes(cu_decode, sizeof cu_decode)));
  int64_t token = r.prompt_ids.back();
  Clock::time_point t_decode;
  for (uint64_t step = 0; step < r.steps; ++step) {
    uint64_t pos = n - 1 + step;
    Status s = in.write(exe, c, &token, 1, pos, false);
    if (s.ok()) s = exe.run_program(c.decode, symbols);
    int64_t next = 0;
    if (s.ok()) s = exe.read_buffer(c.next_token, std::span(reinterpret_cast<uint8_t*>(&next), sizeof next));
    if (!s.ok()) return s.error().with_context("decode at position " + std::to_string(pos));
    if (next < 0 || static_cast<uint64_t>(next) >= c.vocab)
      return make_error(ErrorKind::kDevice, "decode at position " + std::to_string(pos) + ": next_token " +
                                                std::to_string(next) + " is outside the vocabulary [0, " +
                                                std::to_string(c.vocab) + ")");
    out.generated_ids.push_back(next);
    token = next;
    if (step == 0) {
      out.prefill_ms = ms_since(t0);
      t_decode = Clock::now();
    }
  }
  out.decode_steps = r.steps - 1;
  out.decode_ms = out.decode_steps > 0 ? ms_since(t_decode) : 0.0;
  return out;
}

}  // namespace kern::run
