// The engine's model runner: drives one sequence through the causal-LM caller
// contract (SPEC §7, docs/causal-lm-manifest.md) and the speculative programs
// (SPEC §8): chunked prefill through `prefill`, one token at a time through
// `decode`, a DSpark round through `draft` / `verify` / `draft_precompute`.
// One sequence at a time with an identity block table (a token's KV slot is
// its position), or, for the batched engine (docs/batching.md), prefill
// through a sequence's own pages (use_pages) and decode_batch over the batch
// rows (model_runner_batch.cpp). It is the only code that writes contract buffers, and the single
// owner of the readback slots, the timing marks and the device-side input
// cache (cu_seqlens_q): one runner per Executable (the Model's), so no other
// writer can leave an input stale behind the cache's back.
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
// It does not check token ids or capacity: the engine checks requests first
// (check_request, request.h); the executable checks symbol bounds.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "common/result.h"
#include "kern-engine/batch_contract.h"
#include "kern-engine/decode_stats.h"
#include "kern-engine/causal_lm_contract.h"
#include "kern-engine/request.h"
#include "kern-engine/spec_contract.h"
#include "kern-load/executable.h"

namespace kern::engine {

/// Slot of position `pos` through a sequence's `pages` (position order):
/// pages[pos / 16] * 16 + pos % 16, or -1 past them.
int64_t slot_through(std::span<const int32_t> pages, uint64_t pos);

/// Decode steps queued on the device ahead of the token being read
/// (asynchronous mode): step k + 1 is enqueued before step k's token is read.
inline constexpr uint64_t kDecodeLookahead = 2;
// The steps after the last one issued wait with nothing queued behind them.
static_assert(kDecodeDrainSteps == kDecodeLookahead - 1, "the drain is the lookahead's tail");

/// Borrowed executable and contracts (they must outlive the runner).
class ModelRunner {
 public:
  /// `spec` (may be null) enables the speculative programs.
  ModelRunner(load::Executable& exe, const CausalLmContract& c, const SpecContract* spec = nullptr);

  const CausalLmContract& contract() const { return c_; }
  /// The speculative contract, or null.
  const SpecContract* spec() const { return spec_; }

  /// Writes the identity block table [0, 1, ..., pages - 1]. Call once
  /// before the first prefill or decode of a sequence.
  Status write_block_table();
  /// Writes `pages` (the sequence's KV pages from the pool, in position
  /// order) as the block table, padded with -1; later write_inputs map
  /// positions to slots through them (position p: pages[p / 16] * 16 + p %
  /// 16, -1 past them). For a batched engine's prefill (docs/batching.md).
  /// Errors: more pages than the table has (kUsage), the write's.
  Status use_pages(std::span<const int32_t> pages);

  // ---- Batched decode (docs/batching.md; model_runner_batch.cpp). Row r of
  // the batch buffers belongs to the sequence in batch slot r; a free slot
  // has seq_lens 0 and slot -1, so it writes no KV and never advances.

  /// The batch contract (may be null: no batched decode). Set once, before any batch call.
  void set_batch(const BatchContract* b) { batch_ = b; }
  const BatchContract* batch() const { return batch_; }
  /// Marks every row of the batch free (5 writes of max_batch rows). Errors
  /// (kUsage): no batch contract, steps in flight.
  Status batch_reset();
  /// Puts a sequence into row `row`: its next input `token` at `pos`
  /// (seq_lens pos + 1, the slot through `pages`) and its table row (`pages`,
  /// -1 padded): 5 writes, stream-ordered after every step queued so far.
  Status batch_join(uint32_t row, int64_t token, uint64_t pos, std::span<const int32_t> pages);
  /// Frees row `row` (position 0, slot -1, seq_lens 0: 3 writes): steps
  /// enqueued from now on write nothing for it.
  Status batch_leave(uint32_t row);
  /// Enqueues one decode_batch step over rows [0, rows) and the readback of
  /// their next_token; no host write, no wait. Errors (kUsage): rows outside
  /// [1, max_batch]; more than kReadbackSlots steps in flight.
  Status enqueue_batch(uint64_t rows);
  /// Waits for the oldest enqueued batch step and returns its rows' ids (one
  /// per row; a free row's id is meaningless). Errors: none in flight (kUsage), the wait's.
  Result<std::vector<int64_t>> next_batch();
  /// Batch steps enqueued whose ids have not been taken.
  uint64_t batch_in_flight() const { return batch_queue_.size(); }
  /// Waits for every batch step in flight and drops its ids (joined failures).
  Status discard_batch();
  /// Checks a batch id of a live row, as decode() does ("next_token holds ...").
  Status check_batch_id(int64_t id) const { return check_id(id, "next_token"); }

  /// Writes the per-row sampling inputs of the decode program
  /// (docs/causal-lm-manifest.md "Sampling"): row i takes rows[i], the rest
  /// are greedy. Only when they differ from what the buffers hold (they
  /// are zero when allocated: greedy), so a run of greedy requests, or a
  /// sequence's steps, costs no host write; otherwise one write per input
  /// (5). Greedy rows are written as zeros. Errors (kUsage): more rows than
  /// the plan's sampling rows; a sampled row on a plan without sampling
  /// inputs.
  Status write_sampling(std::span<const SamplingParams> rows);
  /// Writes row `row` of the sampling inputs (a batch row's request, for
  /// decode_batch's sampling dispatch; greedy as zeros), the other rows
  /// untouched: 5 writes of one element each, stream-ordered after every
  /// step queued so far, and none when the row already holds `p`. Errors
  /// (kUsage): `row` outside the plan's sampling rows; a sampled `p` on a
  /// plan without sampling inputs.
  Status write_sampling_row(uint64_t row, const SamplingParams& p);

  /// Runs `prefill` over `ids` at positions [start, start + ids.size()) in
  /// chunks of `chunk` tokens (>= 1; the caller clamps it to the tokens
  /// bound): fills the KV cache only. `progress` (may be null) is called
  /// after each chunk with (tokens done, ids.size()). Errors from the
  /// executable get "prefill chunk at position P" as context. Returns the
  /// number of chunks run. Issues work without waiting for it.
  /// `after_chunk` (may be null) runs after each chunk's prefill with the
  /// chunk's length, its inputs still in place; an error it returns ends
  /// prefill.
  Result<uint64_t> prefill(std::span<const int64_t> ids, uint64_t start, uint64_t chunk,
                           const std::function<void(uint64_t, uint64_t)>* progress = nullptr,
                           const std::function<Status(uint64_t)>* after_chunk = nullptr);

  /// The prompt's last prefill chunk through `prefill_last` (needs
  /// contract().has_prefill_last(); docs/causal-lm-manifest.md
  /// "prefill_last"): `ids` (>= 1, at most the tokens bound; it ends with the
  /// prompt's last token) at positions [start, start + ids.size()). Fills
  /// their KV, writes the id after the prompt to next_token[0] and leaves the
  /// carries holding the first decode step's inputs (that id at position
  /// start + ids.size()), as the first `decode` of the last prompt token
  /// would. Synchronous: reads the id back (waits for the device) and
  /// returns it. Errors get "prefill_last at position P" (the chunk's start)
  /// as context; an id outside [0, vocab) is kDevice.
  Result<int64_t> prefill_last(std::span<const int64_t> ids, uint64_t start);
  /// prefill_last, asynchronously: enqueues it and the readback of its id
  /// as the oldest entry of the decode queue, so next_decoded() returns the
  /// id after the prompt and enqueue_decode() steps (no host write) continue
  /// from the carries it left. No timing record (it is prefill, not a decode
  /// step). Errors (kUsage): decode steps still in flight; more than
  /// kReadbackSlots readbacks in flight; the executable's, with context.
  Status enqueue_prefill_last(std::span<const int64_t> ids, uint64_t start);

  /// Writes token_ids/positions/slot_mapping for `n` tokens from position
  /// `pos` (positions pos .. pos + n - 1, slot = position), seq_lens =
  /// pos + n and cu_seqlens_q = [0, n] (only when it differs from the last
  /// cu_seqlens_q this runner wrote: the runner is the buffer's only writer).
  /// Any n >= 1 (the staging grows).
  Status write_inputs(const int64_t* ids, uint64_t n, uint64_t pos);

  /// Synchronous step: writes token_ids/positions/slot_mapping/seq_lens for
  /// `token` at `pos`, runs `decode` and reads `next_token` (8 bytes; waits
  /// for the device). Errors get "decode at position P" as context; a
  /// next_token outside [0, vocab) is an error (kDevice).
  Result<int64_t> decode(int64_t token, uint64_t pos);

  /// Asynchronous decode, step 1: writes the first step's inputs (`token` at
  /// `pos`, seq_lens = pos + 1, cu_seqlens_q = [0, 1]) — the only host
  /// writes of the whole decode. Errors (kUsage) when steps are still in
  /// flight (discard_in_flight them first).
  Status start_decode(int64_t token, uint64_t pos);
  /// Enqueues the next decode step and its token's readback; no host write,
  /// no wait. At most kReadbackSlots steps may be in flight (kUsage error).
  Status enqueue_decode();
  /// Waits for the oldest enqueued step's token and returns it (errors as
  /// decode(); "no decode step in flight" is kUsage). The step leaves the
  /// queue only once its wait succeeded, so a failed wait leaves it for
  /// discard_in_flight to drain.
  Result<int64_t> next_decoded();
  /// Steps enqueued whose token has not been taken.
  uint64_t in_flight() const { return queue_.size(); }
  /// Waits for every step in flight and drops their tokens (surplus steps,
  /// or the rest after an error). Waits on every step even when one wait
  /// fails; the queue is empty afterwards; the failures are joined.
  Status discard_in_flight();

  /// Speculative decoding (SPEC §8; needs spec()): the last prompt token at
  /// `pos` through decode_spec, then its row's draft_precompute. Returns the
  /// first generated id. Errors get "decode_spec at position P" as context.
  Result<int64_t> spec_first_token(int64_t token, uint64_t pos);
  /// draft_precompute over the `rows` rows whose inputs are in place.
  Status spec_precompute(uint64_t rows);
  /// The draft of a round from `anchor` at `pos`: writes the block's inputs
  /// (anchor + block - 1 mask rows, positions pos .., seq_lens = pos +
  /// block), runs `draft` and reads the block - 1 drafted ids into
  /// rows()[1 ..]. Errors get "draft at position P" as context; a drafted
  /// id outside [0, vocab) is an error (kDevice).
  Status spec_draft(int64_t anchor, uint64_t pos);
  /// The verify of the round spec_draft set up: token_ids = rows() (the rest
  /// of the inputs stay), runs `verify` and reads the block's predictions
  /// (predictions()). Errors get "verify at position P" as context.
  Status spec_verify(uint64_t pos);
  /// Anchor + drafted ids of the last spec_draft (block entries).
  const std::vector<int64_t>& rows() const { return rows_; }
  /// Predictions of the last spec_verify (block ids; prediction i follows row i).
  const std::vector<int64_t>& predictions() const { return pred_; }

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
    bool prefill = false;  ///< prefill_last's id (no marks, no record)
  };
  /// Runs decode between two timing marks of step `index` (when timed).
  Status run_decode_step(uint64_t index);
  /// Fills `r`'s GPU times of step `index` (when timed); its end is complete.
  Status time_step(uint64_t index, DecodeStepRecord& r);
  /// Checks a token read back at `pos`.
  Result<int64_t> check_token(int64_t next, uint64_t pos) const;
  /// An id read from `buffer` outside [0, vocab) is kDevice.
  Status check_id(int64_t id, const char* buffer) const;
  /// Writes cu_seqlens_q = [0, n] unless this runner last wrote that.
  Status write_cu_seqlens(uint64_t n);
  /// Writes prefill_last's inputs and runs it (the two modes' common part).
  Status run_prefill_last(std::span<const int64_t> ids, uint64_t start);
  /// Runs program `program` with tokens = `tokens` (batch = 1).
  Status run(uint32_t program, uint64_t tokens);
  /// A batch step enqueued by enqueue_batch and not yet taken.
  struct BatchPending {
    uint64_t rows;
    uint32_t slot;
  };

  load::Executable& exe_;
  const CausalLmContract& c_;
  const SpecContract* spec_;
  std::vector<int64_t> token_ids_, positions_, slots_;  ///< staging (grown on demand)
  std::vector<int32_t> pages_;                  ///< use_pages' pages; empty: identity (slot = position)
  const BatchContract* batch_ = nullptr;
  std::deque<BatchPending> batch_queue_;
  std::vector<uint64_t> symbols_;               ///< indexed like Plan.symbols
  std::optional<int32_t> cu_seqlens_n_;         ///< cu_seqlens_q[1] last written (none: unknown)
  /// What the sampling inputs hold, per row (all zero when allocated); nullopt: unknown (a write failed).
  std::vector<std::optional<SamplingParams>> sampling_;
  bool timed_ = false;                          ///< the device has timing marks
  uint64_t steps_ = 0;                          ///< decode steps issued (both modes)
  uint64_t last_timed_ = UINT64_MAX;            ///< index of the last step whose end mark is valid
  uint64_t next_pos_ = 0;                       ///< asynchronous: position of the next step's token
  std::deque<Pending> queue_;
  std::vector<DecodeStepRecord> records_;
  std::vector<int64_t> rows_;  ///< speculative: anchor + drafted ids (block)
  std::vector<int64_t> pred_;  ///< speculative: verify's predictions (block)
};

}  // namespace kern::engine
