// The generation engine (docs/design.md, "The engine"): a single-threaded,
// step-driven core in token ids. Requests are added, each step() does one
// unit of work for the running sequence and returns the token events it
// produced; a request can be aborted at any point. At one sequence (batch
// size 1, the default): requests run one after another in the order added
// (FIFO); the next is admitted once the running one finished and its queued
// steps were drained. set_max_batch(N > 1) hands every call to the batched
// mode (batch_engine.h: continuous batching over decode_batch).
//
// A plain sequence: chunked prefill of the prompt (one chunk per step) whose
// last chunk runs `prefill_last` and yields the first generated id, then one
// id per step through `decode` until max_tokens ids or a stop id. On a plan
// without `prefill_last` (an older manifest), prefill covers the first n-1
// prompt tokens and the last one goes through `decode` (the first id). Asynchronous decode keeps kDecodeLookahead steps queued; steps
// queued past the end are drained (and counted as surplus) in the step that
// finishes the sequence. A speculative sequence (SPEC §8, docs/speculative.md)
// prefills with draft_precompute after each chunk, takes its first id from
// decode_spec, then runs one round per step (draft -> verify -> accept the
// longest matching prefix plus the target's own next id -> precompute); a
// round whose block would cross the capacity falls back to plain decode
// steps for the rest. Both share emit, timing and stop handling.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "common/result.h"
#include "kern-engine/clock.h"
#include "kern-engine/decode_stats.h"
#include "kern-engine/model.h"
#include "kern-engine/request.h"
#include "kern-engine/spec_stats.h"

namespace kern::engine {

class BatchEngine;

/// Why a sequence ended.
enum class FinishReason {
  kStop,     ///< it produced a stop id (kept as its last id)
  kLength,   ///< max_tokens ids
  kAborted,  ///< Engine::abort
  kError,    ///< a failure (TokenEvent::error)
};

/// What one finished sequence did. Prefill time covers the prefill chunks
/// and the first generated id (time to the first id); decode time covers
/// the remaining ids (until the last one is taken; surplus steps of the
/// asynchronous loop are drained afterwards, untimed).
struct SequenceResult {
  std::vector<int64_t> generated_ids;
  bool stopped = false;        ///< ended on a stop id (else after max_tokens ids)
  uint64_t chunk = 0;          ///< prefill chunk actually used
  uint64_t prefill_chunks = 0; ///< prefill program runs
  /// Prompt tokens whose KV came from the prefix cache (full 16-token pages
  /// from position 0, mapped instead of prefilled); 0 on a miss or with the
  /// cache off (docs/serving.md, "Prefix caching").
  uint64_t cached_tokens = 0;
  double prefill_ms = 0;
  double decode_ms = 0;        ///< wall time from the first id taken to the last (covers decode_steps_timed)
  uint64_t decode_steps = 0;   ///< generated ids - 1
  /// Decode steps whose work lies inside decode_ms: those issued after the
  /// first id was taken. The synchronous loop and speculative rounds issue
  /// every step after the previous id is read (= decode_steps); the
  /// asynchronous loop had kDecodeLookahead - 1 more issued with the first
  /// (on the cpu device they ran before the first id was read), so it times
  /// decode_steps - (kDecodeLookahead - 1), and 0 at --steps 2: per-token
  /// figures are computed over these steps only, and are absent at 0.
  uint64_t decode_steps_timed = 0;
  bool sync = false;           ///< the synchronous loop ran
  uint64_t surplus_steps = 0;  ///< asynchronous steps run after the end and discarded
  DecodeStats stats;           ///< steady-state figures per decode step
  /// Every decode step's record, in order (kern-run bench concatenates the
  /// steady_part of several sequences).
  std::vector<DecodeStepRecord> records;
  std::optional<SpecStats> spec;  ///< speculative rounds (Request::speculative); else empty
};

/// Whether a request added now would be admitted by the next step() (what
/// a server's queue asks before handing it over, so requests wait in its
/// own bounded queue rather than inside the engine).
enum class Admission {
  kNow,    ///< the next step admits it: nothing waits before it, a batch slot and its KV pages are free
  kLater,  ///< it would wait: running sequences hold the slot or the pages it needs
  kNever,  ///< prompt + max_tokens can never fit (add_request refuses it and says why)
};

/// KV cache pages (kKvBlockTokens tokens each) at one moment.
struct KvPages {
  uint32_t total = 0;  ///< the pool: capacity / 16 (batched), ceil(capacity / 16) (one sequence)
  uint32_t used = 0;   ///< reserved by unfinished sequences (prompt + max_tokens each; a shared page once)
  uint32_t cached = 0; ///< holding a prefix cache key (held by a sequence or not; the rest of them count as free)
  uint64_t evictions = 0;  ///< cached pages reused for other tokens since the engine started
  /// Positions decode wrote that were prefilled again before their pages
  /// were keyed (batch_engine.h), since the engine started.
  uint64_t reprefilled_tokens = 0;
  /// Finished requests whose decode-written pages wait for their re-prefill
  /// (it runs while nothing else prefills, batch_engine.h): 0 once the
  /// engine has caught up, so a caller can wait for that state.
  uint32_t reprefills_pending = 0;
};

/// What a step produced for one request.
struct TokenEvent {
  RequestId id = 0;
  std::vector<int64_t> ids;  ///< ids generated in this step, in order (a final stop id included)
  /// Prefill progress after a chunk ran in this step: prompt tokens
  /// prefilled so far, of prefill_total (the prompt's n tokens with prefill_last, else n - 1).
  std::optional<uint64_t> prefilled;
  uint64_t prefill_total = 0;
  /// Prompt tokens the request mapped from the prefix cache (the same in
  /// each of its events once admitted; 0: a miss, or the cache off).
  uint64_t cached_tokens = 0;
  std::optional<FinishReason> finished;  ///< set in the request's last event
  std::optional<Error> error;            ///< with FinishReason::kError
  /// With `finished` (not kAborted): the whole sequence's result.
  std::shared_ptr<const SequenceResult> result;
};

/// The engine. Borrows the Model (it must outlive the engine); one engine
/// per Model, on one thread (Device and Executable are single-threaded).
class Engine {
 public:
  /// `now` (may be empty: Clock::now) is read for every timing.
  explicit Engine(Model& model, NowFn now = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Queues a request after checking it (check_request against the Model's
  /// contract and capacity). Errors (kUsage): check_request's; an id already
  /// waiting or running; speculative on a Model without a SpecContract.
  Status add_request(Request r);

  /// Ends request `id`: a waiting one is removed, a running one stops; its
  /// queued steps are drained in the next step() (or drain()), which
  /// reports it with FinishReason::kAborted. An unknown id is ignored.
  void abort(RequestId id);

  /// Does one unit of work: drains aborted sequences, admits the next
  /// request when none runs, runs one prefill chunk, one decode step or one
  /// speculative round. A failure of a request ends that request (its event
  /// has FinishReason::kError and the error, its queued steps drained and
  /// any drain failure joined); the engine stays usable. Nothing to do:
  /// an empty list.
  Result<std::vector<TokenEvent>> step();

  /// No request waiting or running and nothing queued on the device.
  bool idle() const;

  /// Drains the queued steps of aborted sequences now (their events are
  /// returned by the next step()). Errors: the drain's waits, joined.
  Status drain();

  /// Whether add_request(r) now would be admitted by the next step(). Only
  /// the KV need and the slots are weighed: add_request's other checks
  /// (the sampling, the prompt ids, ...) are not, so kNow and kLater
  /// requests may still be refused by add_request.
  Admission admission(const Request& r) const;
  /// The pool's pages and those reserved now.
  KvPages kv_pages() const;
  /// The most tokens (prompt + max_tokens) one sequence may hold: the
  /// capacity at max_batch 1; batched, the pool's whole pages (at most a
  /// block-table row's).
  uint64_t max_sequence_tokens() const;

  /// The Model the engine runs on.
  Model& model() { return model_; }

  /// Runs up to `max_batch` sequences at once through the plan's
  /// decode_batch (continuous batching, batch_engine.h, docs/batching.md);
  /// 1 (the default) runs one sequence at a time through decode.
  /// `prefix_cache`: the batched mode (even at max_batch 1) with the prefix
  /// cache on (docs/serving.md, "Prefix caching": a prompt's cached full
  /// pages are mapped, not prefilled). Call while idle, before adding
  /// requests. Errors (kUsage): 0; above the plan's max_batch; > 1 or the
  /// prefix cache on a plan without decode_batch; not idle.
  Status set_max_batch(uint64_t max_batch, bool prefix_cache = false);
  /// The batched mode, or null at max_batch 1 (tests read its pool and rows).
  const BatchEngine* batch_engine() const { return batch_.get(); }

 private:
  struct Sequence;
  /// One unit of work of the running sequence; fills `ev`.
  Status advance(Sequence& s, TokenEvent& ev);
  Status step_prefill(Sequence& s, TokenEvent& ev);
  /// The last prefill chunk (`len` tokens) through prefill_last: the first id
  /// without a decode step of the last prompt token (docs/runtime.md).
  Status step_prefill_last(Sequence& s, TokenEvent& ev, uint64_t len);
  Status step_first(Sequence& s, TokenEvent& ev);
  Status step_decode(Sequence& s, TokenEvent& ev);
  Status step_round(Sequence& s, TokenEvent& ev);
  /// Takes generated id `id`: timing, stop and length.
  void emit(Sequence& s, int64_t id, TokenEvent& ev);
  /// Ends the running sequence: drains, fills the result, and the event.
  void finish(Status failure, TokenEvent& ev);
  /// Drains the aborted sequence, if any, into an event.
  std::optional<TokenEvent> retire_aborted();

  Model& model_;
  ModelRunner& runner_;
  NowFn now_;
  std::deque<Request> waiting_;
  std::unique_ptr<Sequence> running_;
  std::unique_ptr<Sequence> aborted_;  ///< stopped while running; reported by the next step
  Status aborted_drain_;              ///< the outcome of draining aborted_'s queued steps
  bool aborted_drained_ = false;      ///< drain() ran for aborted_
  std::vector<TokenEvent> aborted_waiting_;  ///< aborted before they ran; reported by the next step
  std::unique_ptr<BatchEngine> batch_;  ///< set by set_max_batch(> 1): every call goes to it
};

}  // namespace kern::engine
