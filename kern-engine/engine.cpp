// The step-driven generation engine at one sequence (engine.h).
#include "kern-engine/engine.h"

#include "kern-engine/batch_engine.h"
#include "kern-engine/page_allocator.h"
#include "kern-engine/sequence_output.h"

#include <algorithm>
#include <span>
#include <string>

namespace kern::engine {

/// The running (or aborted) request and the state its steps carry.
struct Engine::Sequence : SequenceOutput {
  enum class Phase { kAdmit, kPrefill, kFirst, kDecode, kRound };
  Request req;
  Phase phase = Phase::kAdmit;
  uint64_t chunk = 0;
  uint64_t prefilled = 0;  ///< prompt tokens (of prefill_total()) prefilled
  /// The last chunk goes through prefill_last and yields the first id (the
  /// plan has it and the request is not speculative); else prefill covers
  /// n - 1 tokens and a decode step of the last one yields it.
  bool last_in_prefill = false;
  uint64_t prefill_total() const { return req.prompt_ids.size() - (last_in_prefill ? 0 : 1); }
  // The decode loop (plain decode, or a speculative sequence's fallback).
  int64_t token = 0;     ///< sync: the input token of the next step; speculative: the anchor
  uint64_t pos = 0;      ///< its position (decode loop: of the loop's first step)
  uint64_t loop_steps = 0;  ///< ids the decode loop may take
  uint64_t loop_taken = 0;  ///< ids it took
  uint64_t issued = 0;      ///< asynchronous: steps it issued
  uint64_t issued_at_first = 0;  ///< asynchronous: steps issued when the first id was taken (plain decode)
  bool fallback = false;    ///< speculative: plain decode after the capacity
};

Engine::Engine(Model& model, NowFn now)
    : model_(model), runner_(model.runner()), now_(clock_or_default(std::move(now))) {}

Status Engine::set_max_batch(uint64_t max_batch, bool prefix_cache) {
  auto usage = [](const std::string& m) { return make_error(ErrorKind::kUsage, m); };
  if (!idle() || (batch_ && !batch_->idle())) return usage("max_batch can only change while the engine is idle");
  if (max_batch == 0) return usage("max_batch must be at least 1");
  if (max_batch == 1 && !prefix_cache) {
    batch_.reset();
    return {};
  }
  const BatchContract* b = model_.batch();
  if (b == nullptr && prefix_cache)
    return usage("the prefix cache needs a plan with the batched decode program 'decode_batch' (its pages go "
                 "through block tables; regenerate the manifest with examples/gen_qwen3_manifest.py --max-batch N)");
  if (b == nullptr)
    return usage("max_batch " + std::to_string(max_batch) + " needs a plan with the batched decode program "
                 "'decode_batch' (regenerate the manifest with examples/gen_qwen3_manifest.py --max-batch N)");
  if (max_batch > b->max_batch)
    return usage("max_batch " + std::to_string(max_batch) + " exceeds the plan's max_batch " +
                 std::to_string(b->max_batch) + " (its 'batch' symbol's bound)");
  batch_ = std::make_unique<BatchEngine>(model_, max_batch, now_, prefix_cache);
  return {};
}

Engine::~Engine() {
  batch_.reset();
  // Steps still queued for a sequence that never finished must land before
  // the runner (the Model's) serves another engine.
  if (runner_.in_flight() > 0) (void)runner_.discard_in_flight();
}

Status Engine::add_request(Request r) {
  if (batch_) return batch_->add_request(std::move(r));
  auto usage = [](const std::string& m) { return make_error(ErrorKind::kUsage, m); };
  KERN_RETURN_IF_ERROR(check_request(model_.contract(), model_.capacity(), r));
  if (r.speculative && model_.spec() == nullptr)
    return usage("speculative decoding needs a model loaded with its speculative contract");
  auto same = [&r](const Request& o) { return o.id == r.id; };
  if (std::any_of(waiting_.begin(), waiting_.end(), same) || (running_ && running_->req.id == r.id))
    return usage("request " + std::to_string(r.id) + " is already queued");
  waiting_.push_back(std::move(r));
  return {};
}

void Engine::abort(RequestId id) {
  if (batch_) return batch_->abort(id);
  auto it = std::find_if(waiting_.begin(), waiting_.end(), [id](const Request& r) { return r.id == id; });
  if (it != waiting_.end()) {
    // Never started: nothing to drain; reported by the next step.
    TokenEvent ev;
    ev.id = id;
    ev.finished = FinishReason::kAborted;
    aborted_waiting_.push_back(std::move(ev));
    waiting_.erase(it);
    return;
  }
  if (running_ && running_->req.id == id && !aborted_) {
    aborted_ = std::move(running_);
    aborted_drained_ = false;
  }
}

Admission Engine::admission(const Request& r) const {
  if (batch_) return batch_->admission(r);
  const uint64_t room = model_.capacity();
  if (r.max_tokens > room || r.prompt_ids.size() > room - r.max_tokens) return Admission::kNever;
  return running_ || aborted_ || !waiting_.empty() ? Admission::kLater : Admission::kNow;
}

KvPages Engine::kv_pages() const {
  if (batch_) {
    const PageAllocator& pool = batch_->pages();
    return {pool.total_pages(), pool.total_pages() - batch_->free_pages(), pool.cached_pages(), pool.evictions(),
            batch_->reprefilled_tokens(), batch_->reprefills_pending()};
  }
  KvPages p;
  p.total = pages_for_tokens(model_.capacity());
  if (running_) {
    const Request& r = running_->req;
    p.used = std::min(p.total, pages_for_tokens(r.prompt_ids.size() + r.max_tokens));
  }
  return p;
}

uint64_t Engine::max_sequence_tokens() const {
  return batch_ ? batch_->max_sequence_tokens() : model_.capacity();
}

bool Engine::idle() const {
  if (batch_) return batch_->idle();
  return waiting_.empty() && !running_ && !aborted_ && aborted_waiting_.empty() && runner_.in_flight() == 0;
}

Status Engine::drain() {
  if (batch_) return batch_->drain();
  if (aborted_ && !aborted_drained_) {
    aborted_drain_ = runner_.discard_in_flight();
    aborted_drained_ = true;
    return aborted_drain_;
  }
  return {};
}

std::optional<TokenEvent> Engine::retire_aborted() {
  if (!aborted_) return std::nullopt;
  (void)drain();
  const Status drained = aborted_drain_;
  TokenEvent ev;
  ev.id = aborted_->req.id;
  ev.finished = FinishReason::kAborted;
  if (!drained.ok()) ev.error = drained.error();
  aborted_.reset();
  aborted_drained_ = false;
  aborted_drain_ = {};
  return ev;
}

Result<std::vector<TokenEvent>> Engine::step() {
  if (batch_) return batch_->step();
  std::vector<TokenEvent> events;
  if (auto ev = retire_aborted()) events.push_back(std::move(*ev));
  for (TokenEvent& ev : aborted_waiting_) events.push_back(std::move(ev));
  aborted_waiting_.clear();
  if (!events.empty()) return events;
  if (!running_) {
    if (waiting_.empty()) return events;
    running_ = std::make_unique<Sequence>();
    running_->req = std::move(waiting_.front());
    waiting_.pop_front();
  }
  TokenEvent ev;
  ev.id = running_->req.id;
  Status s = advance(*running_, ev);
  if (!s.ok() || running_->done) finish(std::move(s), ev);
  events.push_back(std::move(ev));
  return events;
}

Status Engine::advance(Sequence& s, TokenEvent& ev) {
  switch (s.phase) {
    case Sequence::Phase::kAdmit: {
      const Request& r = s.req;
      s.chunk = model_.contract().clamp_chunk(r.chunk);
      s.out.chunk = s.chunk;
      s.out.sync = r.sync;  // speculative: the fallback's loop; rounds always read their ids back
      if (r.speculative) {
        s.out.spec = SpecStats{};
        s.out.spec->block = model_.spec()->block;
      }
      runner_.clear_records();
      KERN_RETURN_IF_ERROR(runner_.write_block_table());
      KERN_RETURN_IF_ERROR(runner_.write_sampling(std::span(&r.sampling, 1)));
      s.t0 = now_();
      s.last_in_prefill = model_.contract().prefill_last_for(r.prompt_ids.size()) && !r.speculative;
      s.phase = s.prefill_total() > 0 ? Sequence::Phase::kPrefill : Sequence::Phase::kFirst;
      return advance(s, ev);
    }
    case Sequence::Phase::kPrefill: return step_prefill(s, ev);
    case Sequence::Phase::kFirst: return step_first(s, ev);
    case Sequence::Phase::kDecode: return step_decode(s, ev);
    case Sequence::Phase::kRound: return step_round(s, ev);
  }
  return {};
}

Status Engine::step_prefill(Sequence& s, TokenEvent& ev) {
  // Chunked prefill of the first n - 1 tokens (fills the KV cache only), one
  // chunk per step; a speculative sequence's chunks also go through
  // draft_precompute (their positions and slots are still in place). With
  // prefill_last, of all n tokens, the last chunk yielding the first id.
  const uint64_t total = s.prefill_total();
  const uint64_t len = std::min(s.chunk, total - s.prefilled);
  if (s.last_in_prefill && s.prefilled + len == total) return step_prefill_last(s, ev, len);
  std::function<Status(uint64_t)> precompute = [&](uint64_t rows) {
    auto t = now_();
    Status st = runner_.spec_precompute(rows);
    s.out.spec->prompt_precompute_ms += ms_between(t, now_());
    return st;
  };
  KERN_ASSIGN_OR_RETURN(auto chunks, runner_.prefill(std::span(s.req.prompt_ids).subspan(s.prefilled, len),
                                                     s.prefilled,
                                                     s.chunk, nullptr, s.req.speculative ? &precompute : nullptr));
  s.out.prefill_chunks += chunks;
  s.prefilled += len;
  ev.prefilled = s.prefilled;
  ev.prefill_total = total;
  if (s.prefilled == total) s.phase = Sequence::Phase::kFirst;
  return {};
}

Status Engine::step_prefill_last(Sequence& s, TokenEvent& ev, uint64_t len) {
  const std::span<const int64_t> ids = std::span(s.req.prompt_ids).subspan(s.prefilled, len);
  const uint64_t n = s.req.prompt_ids.size();
  s.out.prefill_chunks += 1;
  s.prefilled += len;
  ev.prefilled = s.prefilled;
  ev.prefill_total = n;
  s.phase = Sequence::Phase::kDecode;
  s.loop_steps = s.req.max_tokens;
  if (s.req.sync) {
    // The decode loop's first input is the id after the prompt, at position n.
    KERN_ASSIGN_OR_RETURN(s.token, runner_.prefill_last(ids, s.prefilled - len));
    s.pos = n - 1;     // the loop's first step (this one) had the last prompt token's position
    s.loop_taken = 1;  // so the next decode step's input, the first id, is at s.pos + s.loop_taken = n
    emit(s, s.token, ev);
    return {};
  }
  // Asynchronous: prefill_last's id is the decode queue's first entry (it
  // counts as an issued step of the loop); decode steps follow from the
  // carries it left, with no host write.
  KERN_RETURN_IF_ERROR(runner_.enqueue_prefill_last(ids, s.prefilled - len));
  s.issued = 1;
  s.pos = n - 1;
  return step_decode(s, ev);
}

Status Engine::step_first(Sequence& s, TokenEvent& ev) {
  const uint64_t n = s.req.prompt_ids.size();
  const int64_t last = s.req.prompt_ids.back();
  if (s.req.speculative) {
    KERN_ASSIGN_OR_RETURN(s.token, runner_.spec_first_token(last, n - 1));
    emit(s, s.token, ev);
    s.pos = n;  // the anchor's position: the target's KV and the draft's context hold [0, pos)
    s.phase = Sequence::Phase::kRound;
    return {};
  }
  // Decode: the last prompt token (the first generated id), then each generated id.
  s.token = last;
  s.pos = n - 1;
  s.loop_steps = s.req.max_tokens;
  if (!s.req.sync) KERN_RETURN_IF_ERROR(runner_.start_decode(last, s.pos));
  s.phase = Sequence::Phase::kDecode;
  return step_decode(s, ev);
}

Status Engine::step_decode(Sequence& s, TokenEvent& ev) {
  int64_t next = 0;
  if (s.req.sync) {
    KERN_ASSIGN_OR_RETURN(next, runner_.decode(s.token, s.pos + s.loop_taken));
    s.token = next;
  } else {
    // Keep kDecodeLookahead steps queued (step k + 1 is issued before step
    // k's token is read); never issue a step beyond the loop's ids, so no
    // step writes KV past pos + loop_steps - 1.
    while (s.issued < s.loop_steps && runner_.in_flight() < kDecodeLookahead) {
      KERN_RETURN_IF_ERROR(runner_.enqueue_decode());
      ++s.issued;
    }
    KERN_ASSIGN_OR_RETURN(next, runner_.next_decoded());
  }
  ++s.loop_taken;
  if (s.fallback) s.out.spec->fallback_steps = s.loop_taken;
  emit(s, next, ev);
  return {};
}

Status Engine::step_round(Sequence& s, TokenEvent& ev) {
  const SpecContract& spec = *model_.spec();
  if (s.pos + spec.block > model_.capacity()) {
    // The block would cross the capacity: plain decode for the rest.
    s.fallback = true;
    s.loop_steps = s.req.max_tokens - s.out.generated_ids.size();
    s.loop_taken = 0;
    s.issued = 0;
    if (!s.req.sync) KERN_RETURN_IF_ERROR(runner_.start_decode(s.token, s.pos));
    s.phase = Sequence::Phase::kDecode;
    return step_decode(s, ev);
  }
  // Draft -> verify -> accept the longest prefix where prediction[i] ==
  // drafted[i], plus the target's own next id (prediction[accepted]).
  SpecRound round;
  auto t0 = now_();
  KERN_RETURN_IF_ERROR(runner_.spec_draft(s.token, s.pos));
  auto t1 = now_();
  round.draft_ms = ms_between(t0, t1);
  KERN_RETURN_IF_ERROR(runner_.spec_verify(s.pos));
  round.verify_ms = ms_between(t1, now_());
  const std::vector<int64_t>& rows = runner_.rows();
  const std::vector<int64_t>& pred = runner_.predictions();
  uint64_t k = 0;
  while (k + 1 < spec.block && pred[k] == rows[k + 1]) ++k;
  round.accepted = k;
  for (uint64_t i = 0; i <= round.accepted && !s.done; ++i) {
    emit(s, pred[i], ev);
    ++round.emitted;
  }
  if (!s.done) {
    auto t = now_();
    Status st = runner_.spec_precompute(round.accepted + 1);
    if (!st.ok()) return st.error().with_context("draft_precompute at position " + std::to_string(s.pos));
    round.precompute_ms = ms_between(t, now_());
  }
  s.token = pred[round.accepted];
  s.pos += round.accepted + 1;
  s.out.spec->rounds.push_back(round);
  return {};
}

void Engine::emit(Sequence& s, int64_t id, TokenEvent& ev) {
  if (s.take_id(s.req, id, now_(), ev) && !s.req.sync && !s.req.speculative) s.issued_at_first = s.issued;
}

void Engine::finish(Status failure, TokenEvent& ev) {
  Sequence& s = *running_;
  SequenceResult& out = s.out;
  out.surplus_steps = runner_.in_flight();
  // The surplus steps wrote only beyond the sequence: let them finish (the
  // executable is idle afterwards) and drop their tokens. After a failure
  // the same drain runs, and its own failure is joined, not dropped.
  Status drained = runner_.discard_in_flight();
  Status st = join(std::move(failure), drained);
  if (!st.ok()) {
    ev.finished = FinishReason::kError;
    ev.error = st.error();
  } else {
    out.decode_steps = out.generated_ids.size() - 1;
    out.decode_ms = out.decode_steps > 0 ? ms_between(s.t_first, s.t_last) : 0.0;
    // Steps issued with the first id (beyond its own) ran, at least in part,
    // before the window opened: not timed.
    const uint64_t early = s.issued_at_first > 1 ? s.issued_at_first - 1 : 0;
    out.decode_steps_timed = out.decode_steps > early ? out.decode_steps - early : 0;
    out.records = runner_.records();
    out.stats = average_decode(steady_part(out.records));
    ev.finished = out.stopped ? FinishReason::kStop : FinishReason::kLength;
    ev.result = std::make_shared<const SequenceResult>(std::move(out));
  }
  running_.reset();
}

}  // namespace kern::engine
