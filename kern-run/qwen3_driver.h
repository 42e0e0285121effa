// Drives one sequence through the Qwen3 caller contract (SPEC §7): chunked
// prefill through `prefill`, one token at a time through `decode`. Batch
// size 1 with an identity block table, so a token's KV slot is its
// position. Shared by generation (generate.h) and the benchmark (bench.h).
// It does not check token ids or capacity: callers check requests first
// (check_request); the executable checks symbol bounds.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/result.h"
#include "kern-load/executable.h"
#include "kern-run/qwen3_contract.h"

namespace kern::run {

/// Borrowed executable and contract (both must outlive the driver). Host
/// staging for one chunk is allocated once, in the constructor.
class Qwen3Driver {
 public:
  /// `chunk` (>= 1) is clamped to the contract's `tokens` bound.
  Qwen3Driver(load::Executable& exe, const Qwen3Contract& c, uint64_t chunk);

  /// The prefill chunk actually used, in tokens.
  uint64_t chunk() const { return chunk_; }

  /// Writes the identity block table [0, 1, ..., pages - 1]. Call once
  /// before the first prefill or decode of a sequence.
  Status write_block_table();

  /// Runs `prefill` over `ids` at positions [start, start + ids.size()) in
  /// chunks of chunk() tokens: fills the KV cache only. `progress` (may be
  /// null) is called after each chunk with (tokens done, ids.size()).
  /// Errors from the executable get "prefill chunk at position P" as context.
  /// Returns the number of chunks run.
  Result<uint64_t> prefill(std::span<const int64_t> ids, uint64_t start,
                           const std::function<void(uint64_t, uint64_t)>* progress = nullptr);

  /// Runs `decode` for `token` at position `pos` and reads `next_token`
  /// (8 bytes; waits for the device). Errors get "decode at position P" as
  /// context; a next_token outside [0, vocab) is an error (kDevice).
  Result<int64_t> decode(int64_t token, uint64_t pos);

 private:
  /// Writes token_ids/positions/slot_mapping for `n` tokens from position
  /// `pos`, seq_lens = pos + n and cu_seqlens_q = [0, n].
  Status write_inputs(const int64_t* ids, uint64_t n, uint64_t pos);

  load::Executable& exe_;
  const Qwen3Contract& c_;
  uint64_t chunk_;
  std::vector<int64_t> token_ids_, positions_;  ///< staging, chunk_ entries
  std::vector<uint64_t> symbols_;               ///< indexed like Plan.symbols
  uint64_t cu_seqlens_len_ = 0;                 ///< n of the cu_seqlens_q last written (0: none)
};

}  // namespace kern::run
