// The engine's batched mode (batch_engine.h, docs/batching.md).
#include "kern-engine/batch_engine.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <unordered_map>

#include "kern-engine/scheduler.h"
#include "kern-engine/sequence_output.h"

namespace kern::engine {

/// A request from admission to its last event.
struct BatchEngine::Seq : SequenceOutput {
  /// kFirst: its last chunk ran through prefill_last, its first id not yet read.
  enum class Phase { kWaiting, kPrefill, kFirst, kJoin, kDecode };
  uint64_t serial = 0;
  Request req;
  Phase phase = Phase::kWaiting;
  std::vector<int32_t> pages;  ///< held pages, position order (the cached prefix's first)
  uint32_t pages_needed = 0;
  uint32_t published = 0;  ///< leading pages keyed in the prefix cache (mapped from it or published)
  BlockKey key = 0;        ///< the prefix cache key of page published - 1 (0: none)
  uint64_t chunk = 0;
  uint64_t prefilled = 0;  ///< prompt tokens (of prefill_total()) prefilled
  /// The prompt's last chunk runs prefill_last (the plan has it): prefill
  /// covers all n tokens; else n - 1, and decode_batch computes the first id.
  bool last_in_prefill = false;
  uint64_t prefill_total() const { return req.prompt_ids.size() - (last_in_prefill ? 0 : 1); }
  /// The first position decode writes: n with prefill_last, else n - 1.
  uint64_t decode_from() const { return req.prompt_ids.size() - (last_in_prefill ? 0 : 1); }
  int64_t row = -1;        ///< batch row while kDecode
  uint64_t issued = 0;     ///< decode steps issued with this sequence in its row
  bool aborted = false;
  /// After it ended: its decode-written positions [reprefill_pos,
  /// reprefill_end) still to prefill again; prompt_ids then holds the prompt
  /// and the generated ids a decode step fed.
  uint64_t reprefill_pos = 0;
  uint64_t reprefill_end = 0;
};

uint64_t batch_bucket(uint64_t live, uint64_t max_batch) {
  uint64_t b = 1;
  while (b < live) b *= 2;
  return std::min(b, max_batch);
}

BatchEngine::BatchEngine(Model& model, uint64_t max_batch, NowFn now, bool prefix_cache)
    : model_(model),
      runner_(model.runner()),
      batch_(*model.batch()),
      max_batch_(max_batch),
      prefix_cache_(prefix_cache),
      now_(clock_or_default(std::move(now))),
      pages_(static_cast<uint32_t>(model.capacity() / kKvBlockTokens)),
      rows_(max_batch, nullptr) {}

BatchEngine::~BatchEngine() {
  if (runner_.batch_in_flight() > 0) (void)runner_.discard_batch();
}

Status BatchEngine::add_request(Request r) {
  auto usage = [](const std::string& m) { return make_error(ErrorKind::kUsage, m); };
  KERN_RETURN_IF_ERROR(check_request(model_.contract(), model_.capacity(), r));
  if (r.speculative) return usage("speculative decoding runs one sequence at a time (max_batch 1)");
  if (r.sync) return usage("the synchronous decode loop runs one sequence at a time (max_batch 1)");
  if (!r.sampling.greedy() && !batch_.samples)
    return usage("sampling (temperature " + std::to_string(r.sampling.temperature) +
                 ") at max_batch > 1 needs a plan whose batched decode program (decode_batch) samples; this "
                 "one's predates its sampling dispatch: regenerate the manifest with examples/gen_qwen3_manifest.py, "
                 "or use max_batch 1 (kern-run --max-batch 1)");
  const uint64_t tokens = r.prompt_ids.size() + r.max_tokens;
  const uint32_t need = pages_for_tokens(tokens);
  if (need > pages_.total_pages() || need > batch_.pages_per_seq)
    return usage("the prompt (" + std::to_string(r.prompt_ids.size()) + " tokens) + max_tokens (" +
                 std::to_string(r.max_tokens) + ") need " + std::to_string(need) + " KV pages of " +
                 std::to_string(kKvBlockTokens) + " tokens; the KV pool has " + std::to_string(pages_.total_pages()) +
                 " pages in all, so it can never fit");
  auto same = [&r](const std::unique_ptr<Seq>& s) { return s->req.id == r.id; };
  if (std::any_of(waiting_.begin(), waiting_.end(), same) || std::any_of(admitted_.begin(), admitted_.end(), same))
    return usage("request " + std::to_string(r.id) + " is already queued");
  auto s = std::make_unique<Seq>();
  s->serial = next_serial_++;
  s->pages_needed = need;
  s->req = std::move(r);
  waiting_.push_back(std::move(s));
  return {};
}

Admission BatchEngine::admission(const Request& r) const {
  const uint64_t tokens = r.prompt_ids.size() + r.max_tokens;
  if (tokens < r.max_tokens || tokens > max_sequence_tokens()) return Admission::kNever;
  std::vector<WaitingEntry> entries;
  entries.reserve(waiting_.size() + 1);
  for (const auto& s : waiting_) entries.push_back({s->serial, pages_to_take(*s).second});
  Seq probe;
  probe.req.prompt_ids = r.prompt_ids;
  probe.pages_needed = pages_for_tokens(tokens);
  entries.push_back({0, pages_to_take(probe).second});
  const SchedulerOutput plan =
      schedule({max_batch_, static_cast<uint64_t>(admitted_.size()), free_pages(), entries});
  return plan.admit.size() == entries.size() ? Admission::kNow : Admission::kLater;
}

uint64_t BatchEngine::max_sequence_tokens() const {
  return std::min<uint64_t>(pages_.total_pages(), batch_.pages_per_seq) * kKvBlockTokens;
}

void BatchEngine::abort(RequestId id) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if ((*it)->req.id != id) continue;
    TokenEvent ev;
    ev.id = id;
    ev.finished = FinishReason::kAborted;
    pending_events_.push_back(std::move(ev));
    waiting_.erase(it);
    return;
  }
  for (auto& s : admitted_)
    if (s->req.id == id) s->aborted = true;  // ended by the next step
}

bool BatchEngine::idle() const {
  return waiting_.empty() && admitted_.empty() && reprefills_.empty() && pending_events_.empty() &&
         runner_.batch_in_flight() == 0 && runner_.in_flight() == 0;
}

Status BatchEngine::drain() {
  queued_.clear();
  Status first_ids = runner_.discard_in_flight();  // a prefill_last's id not taken yet
  return join(runner_.discard_batch(), std::move(first_ids));
}

uint64_t BatchEngine::live_rows() const {
  return static_cast<uint64_t>(std::count_if(rows_.begin(), rows_.end(), [](const Seq* s) { return s != nullptr; }));
}

TokenEvent& BatchEngine::event_for(std::vector<TokenEvent>& events, const Seq& s) {
  for (TokenEvent& ev : events)
    if (ev.id == s.req.id && !ev.finished) return ev;
  events.emplace_back();
  events.back().id = s.req.id;
  events.back().cached_tokens = s.out.cached_tokens;
  return events.back();
}

std::pair<PrefixHit, uint32_t> BatchEngine::pages_to_take(const Seq& s) const {
  PrefixHit hit;
  // At most the pages before the last prompt token's: it is always computed
  // (its row gives the first id: prefill_last's, or a decode step's), and
  // the page it is in is the sequence's own.
  if (prefix_cache_)
    hit = pages_.match(s.req.prompt_ids, static_cast<uint32_t>((s.req.prompt_ids.size() - 1) / kKvBlockTokens));
  // Mapping a cached page nobody holds takes it out of the free count too.
  uint32_t take = s.pages_needed - static_cast<uint32_t>(hit.pages.size());
  for (const int32_t p : hit.pages)
    if (pages_.holds(p) == 0) ++take;
  return {std::move(hit), take};
}

Status BatchEngine::admit() {
  // One at a time, in arrival order: admitting one may publish or evict
  // what the next one would map.
  while (!waiting_.empty()) {
    Seq& head = *waiting_.front();
    const auto usable = static_cast<uint32_t>((head.req.prompt_ids.size() - 1) / kKvBlockTokens);
    if (prefix_cache_) KERN_RETURN_IF_ERROR(finish_reprefills_for(head.req.prompt_ids, usable));
    auto [hit, take] = pages_to_take(head);
    const WaitingEntry entry{head.serial, take};
    const SchedulerOutput plan =
        schedule({max_batch_, static_cast<uint64_t>(admitted_.size()), free_pages(), std::span(&entry, 1)});
    if (plan.admit.empty()) break;
    // Re-prefills yield their pages to a request (oldest first).
    while (pages_.free_pages() < take && !reprefills_.empty()) {
      cancel_reprefill();
      std::tie(hit, take) = pages_to_take(head);
    }
    // A mapped page that only a cancelled re-prefill held costs a page now:
    // not reached in the tests; the next step admits it with exact counts.
    if (pages_.free_pages() < take) break;
    std::unique_ptr<Seq> s = std::move(waiting_.front());
    waiting_.pop_front();
    pages_.retain(hit.pages);  // before allocate(), which could otherwise evict them
    auto fresh = pages_.allocate(s->pages_needed - static_cast<uint32_t>(hit.pages.size()));  // fits: schedule()
    if (!fresh.ok()) {
      pages_.release(hit.pages);
      return fresh.error();
    }
    s->pages = std::move(hit.pages);
    s->pages.insert(s->pages.end(), fresh->begin(), fresh->end());
    s->published = static_cast<uint32_t>(s->pages.size() - fresh->size());
    s->key = hit.key;
    s->prefilled = uint64_t{s->published} * kKvBlockTokens;
    s->out.cached_tokens = s->prefilled;
    s->chunk = model_.contract().clamp_chunk(s->req.chunk);
    s->out.chunk = s->chunk;
    s->t0 = now_();
    s->last_in_prefill = model_.contract().prefill_last_for(s->req.prompt_ids.size());
    s->phase = s->prefill_total() > s->prefilled ? Seq::Phase::kPrefill : Seq::Phase::kJoin;
    admitted_.push_back(std::move(s));
  }
  return {};
}

void BatchEngine::publish(Seq& s, uint64_t written) {
  if (!prefix_cache_) return;
  const uint64_t full = written / kKvBlockTokens;
  for (uint64_t i = s.published; i < full && i < s.pages.size(); ++i) {
    // The page's tokens: the prompt's, then the generated ids'.
    std::array<int64_t, kKvBlockTokens> block{};
    for (uint64_t j = 0; j < kKvBlockTokens; ++j) {
      const uint64_t pos = i * kKvBlockTokens + j;
      const uint64_t n = s.req.prompt_ids.size();
      block[j] = pos < n ? s.req.prompt_ids[pos] : s.out.generated_ids[pos - n];
    }
    auto key = pages_.publish(s.key, block, s.pages[i]);
    if (!key.ok()) return;  // not reached: the page is held and was never keyed
    s.key = *key;
    s.published = static_cast<uint32_t>(i + 1);
  }
}

Status BatchEngine::prefill_one(std::vector<TokenEvent>& events) {
  for (auto& sp : admitted_) {
    Seq& s = *sp;
    if (s.phase != Seq::Phase::kPrefill || s.aborted) continue;
    // One chunk of the first n - 1 prompt tokens through `prefill`, its
    // slots through the sequence's own pages; the chunk starts at a multiple
    // of the chunk size from the sequence's start (batch invariance on cuda).
    // After a cached prefix the first chunk ends at the next multiple of the
    // chunk size, so the cuts stay where they are without the cache.
    const uint64_t total = s.prefill_total();
    const uint64_t len = std::min(s.chunk - s.prefilled % s.chunk, total - s.prefilled);
    const bool last = s.last_in_prefill && s.prefilled + len == total;
    Status st = runner_.use_pages(s.pages);
    if (st.ok() && last) {
      // prefill_last samples with row 0 of the sampling inputs, which batch
      // row 0's steps read too: this request's parameters for the chunk
      // (stream-ordered: steps queued before it read the old ones), then the
      // row's own back. No write for greedy requests beside greedy rows.
      st = runner_.write_sampling_row(0, s.req.sampling);
      // The first id's readback is taken in the next step (take_first_ids).
      if (st.ok())
        st = runner_.enqueue_prefill_last(std::span(s.req.prompt_ids).subspan(s.prefilled, len), s.prefilled);
      if (st.ok() && rows_[0] != nullptr && batch_.samples) st = runner_.write_sampling_row(0, rows_[0]->req.sampling);
      if (st.ok()) s.out.prefill_chunks += 1;
    } else if (st.ok()) {
      auto chunks = runner_.prefill(std::span(s.req.prompt_ids).subspan(s.prefilled, len), s.prefilled, s.chunk);
      if (chunks.ok()) s.out.prefill_chunks += *chunks;
      else st = chunks.error();
    }
    TokenEvent& ev = event_for(events, s);
    if (!st.ok()) {
      finish(s, ev, st);
      return {};
    }
    s.prefilled += len;
    publish(s, s.prefilled);  // its KV is written by work enqueued before any later reader's
    ev.prefilled = s.prefilled;
    ev.prefill_total = total;
    if (s.prefilled == total) s.phase = last ? Seq::Phase::kFirst : Seq::Phase::kJoin;
    return {};  // one chunk per step, between decode steps
  }
  return {};
}

Status BatchEngine::take_first_ids(std::vector<TokenEvent>& events) {
  for (size_t i = 0; i < admitted_.size();) {
    Seq& s = *admitted_[i];
    if (s.phase != Seq::Phase::kFirst || s.aborted) {
      ++i;
      continue;
    }
    // One prefill chunk per step: at most one first id is in flight.
    KERN_ASSIGN_OR_RETURN(const int64_t id, runner_.next_decoded());
    s.phase = Seq::Phase::kJoin;
    TokenEvent& ev = event_for(events, s);
    s.take_id(s.req, id, now_(), ev);
    if (s.done) {
      finish(s, ev, Status{});  // erases it from admitted_
      continue;
    }
    ++i;
  }
  return {};
}

Status BatchEngine::join_ready() {
  for (auto& sp : admitted_) {
    Seq& s = *sp;
    if (s.phase != Seq::Phase::kJoin || s.aborted) continue;
    auto free_row = std::find(rows_.begin(), rows_.end(), nullptr);
    if (free_row == rows_.end()) break;  // admission keeps admitted <= max_batch: not reached
    if (!reset_) {
      KERN_RETURN_IF_ERROR(runner_.batch_reset());
      reset_ = true;
    }
    const uint32_t row = static_cast<uint32_t>(free_row - rows_.begin());
    const uint64_t n = s.req.prompt_ids.size();
    // The row's sampling inputs (no write when they already hold this
    // request's parameters: a greedy row after a greedy one). A decode_batch
    // that does not sample reads none (its requests are greedy: add_request).
    if (batch_.samples) KERN_RETURN_IF_ERROR(runner_.write_sampling_row(row, s.req.sampling));
    if (s.last_in_prefill) {
      // The row's first input is the id prefill_last gave, at position n;
      // that step counts as the sequence's first issued one.
      KERN_RETURN_IF_ERROR(runner_.batch_join(row, s.out.generated_ids.back(), n, s.pages));
      s.issued = 1;
    } else {
      KERN_RETURN_IF_ERROR(runner_.batch_join(row, s.req.prompt_ids.back(), n - 1, s.pages));
    }
    s.row = row;
    *free_row = &s;
    s.phase = Seq::Phase::kDecode;
  }
  return {};
}

void BatchEngine::finish(Seq& s, TokenEvent& ev, Status failure) {
  // Aborted (or failed) with its first id in flight: wait for its prefill_last.
  if (s.phase == Seq::Phase::kFirst) failure = join(std::move(failure), runner_.discard_in_flight());
  if (s.row >= 0) {
    Status left = runner_.batch_leave(static_cast<uint32_t>(s.row));
    failure = join(std::move(failure), left);
    rows_[static_cast<size_t>(s.row)] = nullptr;
    s.row = -1;
  }
  // The full pages whose KV is written stay cached: the prompt's (keyed by
  // prefill_one) and those holding every generated id but the last (written
  // by the step after it, if any), which decode wrote: they are prefilled
  // again first (start_reprefill). Not after a failure: the device's work
  // may not have run.
  const bool reprefill = failure.ok() && start_reprefill(s);
  if (!reprefill) {
    // Every step using these pages is already enqueued: a later owner's work
    // comes after them on the stream. Last page first: a prefix outlives its
    // continuations in the eviction order.
    std::reverse(s.pages.begin(), s.pages.end());
    pages_.release(s.pages);
  }
  if (!failure.ok()) {
    ev.finished = FinishReason::kError;
    ev.error = failure.error();
  } else if (s.aborted) {
    ev.finished = FinishReason::kAborted;
  } else {
    s.out.decode_steps = s.out.generated_ids.size() - 1;
    s.out.decode_ms = s.out.decode_steps > 0 ? ms_between(s.t_first, s.t_last) : 0.0;
    ev.finished = s.out.stopped ? FinishReason::kStop : FinishReason::kLength;
    ev.result = std::make_shared<const SequenceResult>(std::move(s.out));
  }
  const uint64_t serial = s.serial;
  auto it = std::find_if(admitted_.begin(), admitted_.end(),
                         [serial](const std::unique_ptr<Seq>& p) { return p->serial == serial; });
  if (reprefill) reprefills_.push_back(std::move(*it));
  admitted_.erase(it);
}

bool BatchEngine::start_reprefill(Seq& s) {
  if (!prefix_cache_) return false;
  const uint64_t n = s.req.prompt_ids.size();
  const uint64_t g = s.out.generated_ids.size();
  // Decode wrote positions [from, n + g - 1): every generated id's but the
  // last, and without prefill_last the last prompt token's (from = n - 1).
  // Its full pages are the ones to key.
  const uint64_t from = s.decode_from();
  const uint64_t end = g > 0 ? (n + g - 1) / kKvBlockTokens * kKvBlockTokens : 0;
  if (end <= from) return false;
  s.req.prompt_ids.insert(s.req.prompt_ids.end(), s.out.generated_ids.begin(),
                          s.out.generated_ids.begin() + static_cast<ptrdiff_t>(end - n));
  s.reprefill_pos = from;
  s.reprefill_end = end;
  return true;
}

Status BatchEngine::reprefill_chunk() {
  Seq& s = *reprefills_.front();
  // Chunks cut at multiples of the chunk size from the sequence's start, as
  // a cold prefill of the same tokens cuts them (prefill_one).
  const uint64_t len = std::min(s.chunk - s.reprefill_pos % s.chunk, s.reprefill_end - s.reprefill_pos);
  Status st = runner_.use_pages(s.pages);
  if (st.ok()) {
    auto chunks = runner_.prefill(std::span(s.req.prompt_ids).subspan(s.reprefill_pos, len), s.reprefill_pos, s.chunk);
    if (!chunks.ok()) st = chunks.error();
  }
  if (st.ok()) {
    s.reprefill_pos += len;
    reprefilled_tokens_ += len;
    if (s.reprefill_pos < s.reprefill_end) return {};
    publish(s, s.reprefill_end);
  }
  std::reverse(s.pages.begin(), s.pages.end());
  pages_.release(s.pages);  // on an error unkeyed: freed
  reprefills_.pop_front();
  return st;
}

Status BatchEngine::finish_reprefills_for(std::span<const int64_t> prompt, uint32_t usable) {
  for (size_t i = 0; i < reprefills_.size();) {
    const Seq& r = *reprefills_[i];
    const std::span<const int64_t> tokens = std::span(r.req.prompt_ids).first(r.reprefill_end);
    const auto common = static_cast<uint64_t>(
        std::mismatch(prompt.begin(), prompt.end(), tokens.begin(), tokens.end()).first - prompt.begin());
    const uint64_t pages = std::min<uint64_t>(common / kKvBlockTokens, usable);
    if (pages <= r.published) {
      ++i;
      continue;
    }
    // The prompt would map pages this re-prefill keys: run it to its end
    // now (the prompt's prefill would compute the same positions anyway).
    if (i > 0) std::rotate(reprefills_.begin(), reprefills_.begin() + static_cast<ptrdiff_t>(i),
                           reprefills_.begin() + static_cast<ptrdiff_t>(i) + 1);
    const uint64_t serial = r.serial;
    while (!reprefills_.empty() && reprefills_.front()->serial == serial) KERN_RETURN_IF_ERROR(reprefill_chunk());
    i = 0;
  }
  return {};
}

void BatchEngine::cancel_reprefill() {
  Seq& s = *reprefills_.front();
  std::reverse(s.pages.begin(), s.pages.end());
  pages_.release(s.pages);  // its keyed prompt pages stay cached; the rest are freed
  reprefills_.pop_front();
  ++reprefills_cancelled_;
}

uint32_t BatchEngine::reprefill_pages() const {
  if (reprefills_.empty()) return 0;
  std::unordered_map<int32_t, uint32_t> holds;
  for (const auto& r : reprefills_)
    for (const int32_t p : r->pages) ++holds[p];
  uint32_t n = 0;
  for (const auto& [page, count] : holds)
    if (pages_.holds(page) == count) ++n;
  return n;
}

void BatchEngine::fail_all(std::vector<TokenEvent>& events, const Error& failure) {
  Status drained = join(runner_.discard_batch(), runner_.discard_in_flight());
  queued_.clear();
  while (!reprefills_.empty()) {
    Seq& s = *reprefills_.front();
    pages_.release(s.pages);  // unkeyed: the device's work may not have run
    reprefills_.pop_front();
  }
  while (!admitted_.empty()) {
    Seq& s = *admitted_.front();
    finish(s, event_for(events, s), join(Status(failure), drained));
  }
}

Status BatchEngine::decode_step(std::vector<TokenEvent>& events) {
  uint64_t live = 0;
  for (size_t r = 0; r < rows_.size(); ++r)
    if (rows_[r] != nullptr) live = r + 1;
  // Keep kDecodeLookahead steps queued while some row still needs ids; a row
  // that needs none gets at most one surplus step (its ids are dropped; it
  // writes KV inside its own reserved pages).
  while (live > 0 && runner_.batch_in_flight() < kDecodeLookahead) {
    bool needed = false;
    for (const Seq* s : rows_)
      if (s != nullptr && s->issued < s->req.max_tokens) needed = true;
    if (!needed) break;
    KERN_RETURN_IF_ERROR(runner_.enqueue_batch(batch_bucket(live, max_batch_)));
    std::vector<uint64_t> serials(rows_.size(), 0);
    for (size_t r = 0; r < rows_.size(); ++r) {
      if (rows_[r] == nullptr) continue;
      serials[r] = rows_[r]->serial;
      ++rows_[r]->issued;
    }
    queued_.push_back(std::move(serials));
  }
  if (queued_.empty()) return {};
  KERN_ASSIGN_OR_RETURN(auto ids, runner_.next_batch());
  const std::vector<uint64_t> serials = std::move(queued_.front());
  queued_.pop_front();
  for (size_t r = 0; r < serials.size() && r < ids.size(); ++r) {
    Seq* s = rows_[r];
    if (serials[r] == 0 || s == nullptr || s->serial != serials[r] || s->done) continue;  // left since: surplus
    TokenEvent& ev = event_for(events, *s);
    Status ok = runner_.check_batch_id(ids[r]);
    if (!ok.ok()) {
      finish(*s, ev, ok);
      continue;
    }
    s->take_id(s->req, ids[r], now_(), ev);
    if (s->done) finish(*s, ev, Status{});
  }
  return {};
}

Result<std::vector<TokenEvent>> BatchEngine::step() {
  std::vector<TokenEvent> events = std::move(pending_events_);
  pending_events_.clear();
  // Aborted admitted sequences leave now (their queued steps' ids are dropped).
  for (size_t i = 0; i < admitted_.size();) {
    if (admitted_[i]->aborted) {
      finish(*admitted_[i], event_for(events, *admitted_[i]), Status{});
      continue;
    }
    ++i;
  }
  Status st = take_first_ids(events);
  if (st.ok()) st = admit();
  // One prefill chunk per step: a prompt's, else a re-prefill's.
  const bool prompt_chunk = std::any_of(admitted_.begin(), admitted_.end(), [](const std::unique_ptr<Seq>& s) {
    return s->phase == Seq::Phase::kPrefill && !s->aborted;
  });
  if (st.ok()) st = prompt_chunk ? prefill_one(events) : reprefills_.empty() ? Status{} : reprefill_chunk();
  if (st.ok()) st = join_ready();
  if (st.ok()) st = decode_step(events);
  if (!st.ok()) fail_all(events, st.error());
  return events;
}

}  // namespace kern::engine
