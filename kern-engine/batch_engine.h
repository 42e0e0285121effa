// The engine's batched mode (docs/batching.md): continuous batching of up to
// max_batch sequences over the plan's `decode_batch` program. Each step():
//   1. admits waiting requests (schedule(): FIFO, a batch slot and the pages
//      for prompt + max_tokens reserved up front, so nothing is preempted);
//   2. runs one prefill chunk of the oldest admitted sequence still
//      prefilling (chunks cut at multiples of the chunk size from the
//      sequence's own start, whatever else runs); with a plan's
//      prefill_last the prompt's last chunk runs it, and the sequence's
//      first id is read back at the start of the next step (take_first_ids)
//      and its row starts from that id (else: prefill covers n - 1 tokens
//      and the row's first decode_batch step, of the last prompt token,
//      gives the first id);
//   3. joins sequences whose prompt is prefilled into a free batch row (host
//      writes for that row only: its step inputs, and its sampling inputs
//      when they differ from what the row holds);
//   4. keeps kDecodeLookahead decode_batch steps queued (rows padded to the
//      next batch-size bucket 1, 2, 4, 8, ... so each bucket is one graph) and
//      takes the oldest step's ids: one id per live row.
// A finished or aborted sequence leaves its row (3 writes) and returns its
// pages at once: every step that still uses them was enqueued before any
// work of a later owner (one in-order stream). Steady state: no host write.
// Row r samples with its own request's parameters, the RNG counted by its
// own position, so a seeded request gets the ids it gets alone; greedy rows
// are the argmax. A leaving row keeps its sampling inputs (its ids are
// dropped; the next occupant's join rewrites them only if they differ).
// Speculative and --sync requests run at max_batch 1. With the prefix cache
// (docs/serving.md, "Prefix caching") admission maps the cached full pages a
// prompt starts with (shared: never written by the sequence) and prefill
// starts after them; a sequence's full prompt pages are keyed once prefill
// wrote their KV. The pages decode wrote (the generated ids', and without
// prefill_last the last prompt token's) are prefilled again after the
// sequence ends, before they are keyed ("re-prefill"): decode's fused kernels round differently from
// prefill's, and a later prompt mapping them must read what a cold prefill
// of the same tokens writes (batch invariance). They stay cached until
// allocate() evicts them.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "common/result.h"
#include "kern-engine/batch_contract.h"
#include "kern-engine/clock.h"
#include "kern-engine/engine.h"
#include "kern-engine/model.h"
#include "kern-engine/page_allocator.h"

namespace kern::engine {

/// Rows a decode_batch step runs for `live` rows (the highest used slot +
/// 1): the next power of two, at most `max_batch`.
uint64_t batch_bucket(uint64_t live, uint64_t max_batch);

class BatchEngine {
 public:
  /// `max_batch` in [1, the plan's max_batch] (the Engine checks it);
  /// `prefix_cache`: map cached prompt prefixes and keep full pages cached
  /// (page_allocator.h, docs/serving.md "Prefix caching").
  BatchEngine(Model& model, uint64_t max_batch, NowFn now, bool prefix_cache = false);
  ~BatchEngine();

  Status add_request(Request r);
  void abort(RequestId id);
  Result<std::vector<TokenEvent>> step();
  bool idle() const;
  Status drain();

  /// Engine::admission: kNever when its pages exceed the pool or a table
  /// row; kNow when schedule() would admit it behind the waiting requests.
  Admission admission(const Request& r) const;
  /// Engine::max_sequence_tokens: min(pool pages, pages_per_seq) x 16.
  uint64_t max_sequence_tokens() const;

  /// Pages of the KV pool, and free now: free or evictable, and the pages
  /// that only re-prefills hold (admission cancels a re-prefill for pages).
  uint32_t pool_pages() const { return pages_.total_pages(); }
  uint32_t free_pages() const { return pages_.free_pages() + reprefill_pages(); }
  /// Generated-id positions prefilled again so far (see above), and the
  /// re-prefills cancelled because admission needed their pages.
  uint64_t reprefilled_tokens() const { return reprefilled_tokens_; }
  /// Finished requests whose re-prefill has not run to its end yet.
  uint32_t reprefills_pending() const { return static_cast<uint32_t>(reprefills_.size()); }
  uint64_t reprefills_cancelled() const { return reprefills_cancelled_; }
  /// The pool and its prefix cache (cached pages, evictions).
  const PageAllocator& pages() const { return pages_; }
  bool prefix_cache() const { return prefix_cache_; }
  /// Sequences in batch rows now.
  uint64_t live_rows() const;

 private:
  struct Seq;
  Status admit();
  /// The cached pages `s` would map and the pages its admission takes from
  /// the free count (new ones, and mapped ones nobody holds).
  std::pair<PrefixHit, uint32_t> pages_to_take(const Seq& s) const;
  /// Keys `s`'s full pages holding positions [0, written) not keyed yet.
  void publish(Seq& s, uint64_t written);
  Status prefill_one(std::vector<TokenEvent>& events);
  /// Starts re-prefilling `s`'s decode-written full pages (it ended) and
  /// takes it from admitted_; false when it has none (the caller frees it).
  bool start_reprefill(Seq& s);
  /// Runs one chunk of the oldest re-prefill; keys its pages and frees the
  /// sequence after its last. Errors: the device's.
  Status reprefill_chunk();
  /// Runs re-prefills to their end while one of them holds more of `prompt`
  /// than the cache maps (at most `usable` pages), so that it maps them.
  Status finish_reprefills_for(std::span<const int64_t> prompt, uint32_t usable);
  /// Drops the oldest re-prefill, keying nothing more (its pages are freed).
  void cancel_reprefill();
  /// Pages held by re-prefills alone (what cancelling them all frees).
  uint32_t reprefill_pages() const;
  /// Takes the first id of each sequence whose prompt's last chunk ran
  /// through prefill_last in an earlier step (its readback waited for only
  /// now, so the decode steps queued behind it keep the device busy): emits
  /// it, and the sequence joins a row (or ends). Errors: the wait's.
  Status take_first_ids(std::vector<TokenEvent>& events);
  Status join_ready();
  Status decode_step(std::vector<TokenEvent>& events);
  /// Removes `s` (done, aborted or failed): leaves its row, frees its pages, fills `ev`.
  void finish(Seq& s, TokenEvent& ev, Status failure);
  TokenEvent& event_for(std::vector<TokenEvent>& events, const Seq& s);
  /// Ends every admitted sequence with `failure` after a device error.
  void fail_all(std::vector<TokenEvent>& events, const Error& failure);

  Model& model_;
  ModelRunner& runner_;
  const BatchContract& batch_;
  uint64_t max_batch_;
  bool prefix_cache_ = false;
  NowFn now_;
  PageAllocator pages_;
  uint64_t next_serial_ = 1;
  std::deque<std::unique_ptr<Seq>> waiting_;
  std::vector<std::unique_ptr<Seq>> admitted_;  ///< prefilling, joining or in a row
  std::deque<std::unique_ptr<Seq>> reprefills_; ///< ended, their decode-written pages prefilled again, oldest first
  uint64_t reprefilled_tokens_ = 0;
  uint64_t reprefills_cancelled_ = 0;
  std::vector<Seq*> rows_;                      ///< per batch row: its sequence or null
  /// Per queued step, oldest first: the serial of each row's sequence at enqueue (0: free).
  std::deque<std::vector<uint64_t>> queued_;
  std::vector<TokenEvent> pending_events_;  ///< aborted waiting requests, reported by the next step
  bool reset_ = false;                      ///< batch_reset ran
};

}  // namespace kern::engine
