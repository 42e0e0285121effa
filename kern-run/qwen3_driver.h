// Drives one sequence through the Qwen3 caller contract (SPEC §7,
// docs/qwen3-manifest.md): chunked prefill through `prefill`, one token at a
// time through `decode`. Batch size 1 with an identity block table, so a
// token's KV slot is its position. Shared by generation (generate.h) and the
// benchmark (bench.h).
//
// Decode runs in one of two modes (docs/runtime.md, "Asynchronous decode"):
// - asynchronous (default): the caller writes the first step's inputs once;
//   every decode step then feeds its sampled token and counters to the next
//   on the device (the manifest's `advance` dispatch), so a step is one
//   program run plus an asynchronous 8-byte readback into a pinned slot. Up
//   to kDecodeLookahead steps are queued ahead of the token being read;
//   surplus steps after a stop are discarded (they write only beyond the
//   sequence).
// - synchronous (`--sync`): each step writes its 4 inputs from the host and
//   reads its token back before the next step is issued (the reference loop).
// It does not check token ids or capacity: callers check requests first
// (check_request); the executable checks symbol bounds.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "common/result.h"
#include "kern-load/executable.h"
#include "kern-run/decode_stats.h"
#include "kern-run/qwen3_contract.h"

namespace kern::run {

/// Decode steps queued on the device ahead of the token being read
/// (asynchronous mode): step k + 1 is enqueued before step k's token is read.
inline constexpr uint64_t kDecodeLookahead = 2;
// The steps after the last one issued wait with nothing queued behind them.
static_assert(kDecodeDrainSteps == kDecodeLookahead - 1, "the drain is the lookahead's tail");

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
  /// Returns the number of chunks run. Issues work without waiting for it.
  /// `after_chunk` (may be null) runs after each chunk's prefill with the
  /// chunk's length, its inputs still in place (speculative decoding's
  /// draft_precompute, spec_generate.h); an error it returns ends prefill.
  Result<uint64_t> prefill(std::span<const int64_t> ids, uint64_t start,
                           const std::function<void(uint64_t, uint64_t)>* progress = nullptr,
                           const std::function<Status(uint64_t)>* after_chunk = nullptr);

  /// Writes token_ids/positions/slot_mapping for `n` tokens from position
  /// `pos` (positions pos .. pos + n - 1, slot = position), seq_lens =
  /// pos + n and cu_seqlens_q = [0, n] (only when n changed since the last
  /// write through this driver). Any n >= 1 (the staging grows).
  Status write_inputs(const int64_t* ids, uint64_t n, uint64_t pos);

  /// Synchronous step: writes token_ids/positions/slot_mapping/seq_lens for
  /// `token` at `pos`, runs `decode` and reads `next_token` (8 bytes; waits
  /// for the device). Errors get "decode at position P" as context; a
  /// next_token outside [0, vocab) is an error (kDevice).
  Result<int64_t> decode(int64_t token, uint64_t pos);

  /// Asynchronous decode, step 1: writes the first step's inputs (`token` at
  /// `pos`, seq_lens = pos + 1, cu_seqlens_q = [0, 1]) — the only host
  /// writes of the whole decode — and forgets any steps still queued.
  Status start_decode(int64_t token, uint64_t pos);
  /// Enqueues the next decode step and its token's readback; no host write,
  /// no wait. At most kReadbackSlots steps may be in flight (kUsage error).
  Status enqueue_decode();
  /// Waits for the oldest enqueued step's token and returns it (errors as
  /// decode(); "no decode step in flight" is kUsage).
  Result<int64_t> next_decoded();
  /// Steps enqueued whose token has not been taken.
  uint64_t in_flight() const { return queue_.size(); }
  /// Waits for every step in flight and drops their tokens (surplus steps).
  Status discard_in_flight();

  /// One record per decode step taken (decode() or next_decoded()) since
  /// the last clear_records(), in order.
  const std::vector<DecodeStepRecord>& records() const { return records_; }
  void clear_records() { records_.clear(); }

 private:
  /// A step enqueued by enqueue_decode and not yet taken.
  struct Pending {
    uint64_t pos;      ///< position of the step's input token
    uint32_t slot;     ///< readback slot
    uint64_t index;    ///< step counter (timing marks)
    DecodeStepRecord record;
  };
  /// Runs decode between two timing marks of step `index` (when timed).
  Status run_decode_step(uint64_t index);
  /// Fills `r`'s GPU times of step `index` (when timed); its end is complete.
  Status time_step(uint64_t index, DecodeStepRecord& r);
  /// Checks a token read back at `pos`.
  Result<int64_t> check_token(int64_t next, uint64_t pos) const;

  load::Executable& exe_;
  const Qwen3Contract& c_;
  uint64_t chunk_;
  std::vector<int64_t> token_ids_, positions_;  ///< staging, chunk_ entries
  std::vector<uint64_t> symbols_;               ///< indexed like Plan.symbols
  uint64_t cu_seqlens_len_ = 0;                 ///< n of the cu_seqlens_q last written (0: none)
  bool timed_ = false;                          ///< the device has timing marks
  uint64_t steps_ = 0;                          ///< decode steps issued (both modes)
  uint64_t last_timed_ = UINT64_MAX;            ///< index of the last step whose end mark is valid
  uint64_t next_pos_ = 0;                       ///< asynchronous: position of the next step's token
  std::deque<Pending> queue_;
  std::vector<DecodeStepRecord> records_;
};

}  // namespace kern::run
