// The engine's model runner: the only writer of contract buffers (model_runner.h).
#include "kern-engine/model_runner.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "kern-engine/host_bytes.h"

namespace kern::engine {
namespace {

/// Timing marks of decode step `index`: a ring of kTimingMarks / 2 steps.
uint32_t start_mark(uint64_t index) { return static_cast<uint32_t>((2 * index) % load::kTimingMarks); }
uint32_t end_mark(uint64_t index) { return static_cast<uint32_t>((2 * index + 1) % load::kTimingMarks); }

std::string at(uint64_t pos) { return "decode at position " + std::to_string(pos); }

/// A row of zeroed sampling inputs (as allocated): temperature 0 = greedy.
constexpr SamplingParams kZeroSampling{0.0f, 0, 0.0f, 0.0f, 0};

}  // namespace

ModelRunner::ModelRunner(load::Executable& exe, const CausalLmContract& c, const SpecContract* spec)
    : exe_(exe), c_(c), spec_(spec) {
  symbols_.assign(exe.plan().symbols()->size(), 0);
  if (c_.batch_symbol != CausalLmContract::kNoSymbol) symbols_[c_.batch_symbol] = 1;  // the batch-1 programs
  timed_ = exe.device().supports_timing();
  sampling_.assign(c.sampling_rows, std::optional<SamplingParams>(kZeroSampling));
  if (spec_ != nullptr) {
    rows_.resize(spec_->block);
    pred_.resize(spec_->block);
  }
}

Status ModelRunner::run(uint32_t program, uint64_t tokens) {
  symbols_[c_.tokens_symbol] = tokens;
  return exe_.run_program(program, symbols_);
}

Status ModelRunner::write_block_table() {
  last_timed_ = UINT64_MAX;  // a new sequence: no gap to the previous one's steps
  pages_.clear();
  std::vector<int32_t> table(c_.block_table_pages);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  return exe_.write_input(c_.block_table, as_bytes(table.data(), table.size() * sizeof(int32_t)));
}

Status ModelRunner::write_sampling(std::span<const SamplingParams> rows) {
  const uint64_t n = c_.sampling_rows;
  const bool all_greedy = std::all_of(rows.begin(), rows.end(), [](const SamplingParams& p) { return p.greedy(); });
  if (n == 0) {  // an older plan: greedy only, nothing to write
    if (all_greedy) return {};
    return make_error(ErrorKind::kUsage, "the plan's decode program does not sample (no sampling inputs)");
  }
  if (rows.size() > n)
    return make_error(ErrorKind::kUsage,
                      std::to_string(rows.size()) + " sampling rows; the plan has " + std::to_string(n));
  std::vector<SamplingParams> want(n, kZeroSampling);
  for (size_t i = 0; i < rows.size() && i < n; ++i) want[i] = rows[i].greedy() ? kZeroSampling : rows[i];
  if (std::equal(want.begin(), want.end(), sampling_.begin(), sampling_.end(),
                 [](const SamplingParams& w, const std::optional<SamplingParams>& held) { return held == w; }))
    return {};
  sampling_.assign(n, std::nullopt);  // unknown until every write succeeded
  std::vector<float> t(n), tp(n), mp(n);
  std::vector<int32_t> tk(n);
  std::vector<int64_t> seed(n);
  for (uint64_t i = 0; i < n; ++i) {
    t[i] = want[i].temperature;
    tk[i] = static_cast<int32_t>(std::min<uint32_t>(want[i].top_k, INT32_MAX));  // >= vocab is off anyway
    tp[i] = want[i].top_p;
    mp[i] = want[i].min_p;
    seed[i] = static_cast<int64_t>(want[i].seed);
  }
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_temperature, as_bytes(t.data(), n * 4)));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_top_k, as_bytes(tk.data(), n * 4)));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_top_p, as_bytes(tp.data(), n * 4)));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_min_p, as_bytes(mp.data(), n * 4)));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_seed, as_bytes(seed.data(), n * 8)));
  sampling_.assign(want.begin(), want.end());
  return {};
}

Status ModelRunner::write_sampling_row(uint64_t row, const SamplingParams& p) {
  const uint64_t n = c_.sampling_rows;
  if (n == 0) {
    if (p.greedy()) return {};
    return make_error(ErrorKind::kUsage, "the plan's decode program does not sample (no sampling inputs)");
  }
  if (row >= n)
    return make_error(ErrorKind::kUsage,
                      "sampling row " + std::to_string(row) + " is outside the plan's " + std::to_string(n) + " rows");
  const SamplingParams want = p.greedy() ? kZeroSampling : p;
  if (sampling_[row] == want) return {};
  sampling_[row].reset();  // unknown until every write succeeded
  const float t = want.temperature, tp = want.top_p, mp = want.min_p;
  const int32_t tk = static_cast<int32_t>(std::min<uint32_t>(want.top_k, INT32_MAX));
  const int64_t seed = static_cast<int64_t>(want.seed);
  const uint64_t r4 = row * 4, r8 = row * 8;
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_temperature, as_bytes(&t, 4), r4));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_top_k, as_bytes(&tk, 4), r4));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_top_p, as_bytes(&tp, 4), r4));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_min_p, as_bytes(&mp, 4), r4));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.sample_seed, as_bytes(&seed, 8), r8));
  sampling_[row] = want;
  return {};
}

Status ModelRunner::use_pages(std::span<const int32_t> pages) {
  if (pages.size() > c_.block_table_pages)
    return make_error(ErrorKind::kUsage, std::to_string(pages.size()) + " pages exceed the block table's " +
                                             std::to_string(c_.block_table_pages));
  last_timed_ = UINT64_MAX;
  std::vector<int32_t> table(c_.block_table_pages, -1);
  std::copy(pages.begin(), pages.end(), table.begin());
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.block_table, as_bytes(table.data(), table.size() * sizeof(int32_t))));
  pages_.assign(pages.begin(), pages.end());
  return {};
}

int64_t slot_through(std::span<const int32_t> pages, uint64_t pos) {
  const uint64_t page = pos / kKvBlockTokens;
  return page < pages.size() ? static_cast<int64_t>(pages[page]) * static_cast<int64_t>(kKvBlockTokens) +
                                   static_cast<int64_t>(pos % kKvBlockTokens)
                             : -1;
}

Status ModelRunner::write_inputs(const int64_t* ids, uint64_t n, uint64_t pos) {
  if (n > token_ids_.size()) {
    token_ids_.resize(n);
    positions_.resize(n);
    slots_.resize(n);
  }
  for (uint64_t i = 0; i < n; ++i) {
    token_ids_[i] = ids[i];
    positions_[i] = static_cast<int64_t>(pos + i);
    // Identity block table: slot == position; else through use_pages' pages.
    slots_[i] = pages_.empty() ? positions_[i] : slot_through(pages_, pos + i);
  }
  size_t bytes = n * sizeof(int64_t);
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.token_ids, as_bytes(token_ids_.data(), bytes)));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.positions, as_bytes(positions_.data(), bytes)));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.slot_mapping, as_bytes(slots_.data(), bytes)));
  int32_t seq_len = static_cast<int32_t>(pos + n);  // capacity <= INT32_MAX: check_request
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.seq_lens, as_bytes(&seq_len, sizeof seq_len)));
  return write_cu_seqlens(n);
}

Status ModelRunner::write_cu_seqlens(uint64_t n) {
  // Decode steps keep [0, 1]: written once. The cache is right because
  // this runner is the buffer's only writer (one per Executable).
  const int32_t cu_n = static_cast<int32_t>(n);
  if (cu_seqlens_n_ != cu_n) {
    cu_seqlens_n_.reset();  // unknown until the write succeeded
    int32_t cu_seqlens[2] = {0, cu_n};
    KERN_RETURN_IF_ERROR(exe_.write_input(c_.cu_seqlens_q, as_bytes(cu_seqlens, sizeof cu_seqlens)));
    cu_seqlens_n_ = cu_n;
  }
  return {};
}

Result<uint64_t> ModelRunner::prefill(std::span<const int64_t> ids, uint64_t start, uint64_t chunk,
                                      const std::function<void(uint64_t, uint64_t)>* progress,
                                      const std::function<Status(uint64_t)>* after_chunk) {
  if (chunk == 0) return make_error(ErrorKind::kUsage, "the prefill chunk must be at least 1 token");
  uint64_t chunks = 0;
  for (uint64_t done = 0; done < ids.size(); done += chunk) {
    uint64_t len = std::min<uint64_t>(chunk, ids.size() - done);
    Status s = write_inputs(ids.data() + done, len, start + done);
    if (s.ok()) s = run(c_.prefill, len);
    if (s.ok() && after_chunk != nullptr) s = (*after_chunk)(len);
    KERN_RETURN_IF_ERROR(s, "prefill chunk at position " + std::to_string(start + done));
    ++chunks;
    if (progress != nullptr) (*progress)(done + len, ids.size());
  }
  return chunks;
}

Status ModelRunner::run_prefill_last(std::span<const int64_t> ids, uint64_t start) {
  if (!c_.has_prefill_last())
    return make_error(ErrorKind::kUsage, "the plan has no program 'prefill_last' (regenerate the manifest with "
                                         "provider/gen_manifest.py)");
  if (ids.empty() || ids.size() > c_.tokens_max)
    return make_error(ErrorKind::kUsage, "prefill_last of " + std::to_string(ids.size()) + " tokens; it takes 1 to " +
                                             std::to_string(c_.tokens_max));
  KERN_RETURN_IF_ERROR(write_inputs(ids.data(), ids.size(), start));
  return run(c_.prefill_last, ids.size());
}

Result<int64_t> ModelRunner::prefill_last(std::span<const int64_t> ids, uint64_t start) {
  Status s = run_prefill_last(ids, start);
  int64_t next = 0;
  if (s.ok()) s = exe_.read_buffer(c_.next_token, std::span(reinterpret_cast<uint8_t*>(&next), sizeof next));
  if (s.ok()) s = check_id(next, "next_token");
  KERN_RETURN_IF_ERROR(s, "prefill_last at position " + std::to_string(start));
  return next;
}

Status ModelRunner::enqueue_prefill_last(std::span<const int64_t> ids, uint64_t start) {
  if (!queue_.empty())
    return make_error(ErrorKind::kUsage, std::to_string(queue_.size()) + " decode steps still in flight");
  if (batch_queue_.size() >= load::kReadbackSlots)
    return make_error(ErrorKind::kUsage, "more than " + std::to_string(load::kReadbackSlots) + " readbacks in flight");
  last_timed_ = UINT64_MAX;
  Pending p{start + ids.size() - 1, static_cast<uint32_t>(steps_ % load::kReadbackSlots), steps_, {}, true};
  Status s = run_prefill_last(ids, start);
  if (s.ok()) s = exe_.read_buffer_async(c_.next_token, p.slot, sizeof(int64_t));
  // The decode steps' one input the carries do not hold (stream-ordered
  // after prefill_last; the unfused decode's attention reads it).
  if (s.ok()) s = write_cu_seqlens(1);
  KERN_RETURN_IF_ERROR(s, "prefill_last at position " + std::to_string(start));
  ++steps_;
  next_pos_ = start + ids.size();  // the first decode step's input: the id after the prompt
  queue_.push_back(p);
  return {};
}

Status ModelRunner::run_decode_step(uint64_t index) {
  if (timed_) KERN_RETURN_IF_ERROR(exe_.device().record_mark(start_mark(index)));
  KERN_RETURN_IF_ERROR(run(c_.decode, 1));
  if (timed_) KERN_RETURN_IF_ERROR(exe_.device().record_mark(end_mark(index)));
  return {};
}

Status ModelRunner::time_step(uint64_t index, DecodeStepRecord& r) {
  if (!timed_) return {};
  KERN_ASSIGN_OR_RETURN(auto busy, exe_.device().mark_elapsed_ms(start_mark(index), end_mark(index)));
  r.gpu_busy_ms = busy;
  if (last_timed_ != UINT64_MAX && last_timed_ + 1 == index) {
    KERN_ASSIGN_OR_RETURN(auto gap, exe_.device().mark_elapsed_ms(end_mark(last_timed_), start_mark(index)));
    r.gpu_gap_ms = gap;
  }
  last_timed_ = index;
  return {};
}

Result<int64_t> ModelRunner::check_token(int64_t next, uint64_t pos) const {
  KERN_RETURN_IF_ERROR(check_id(next, "next_token"), at(pos));
  return next;
}

Result<int64_t> ModelRunner::decode(int64_t token, uint64_t pos) {
  const load::HostTraffic before = exe_.traffic();
  const uint64_t index = steps_++;
  Status s = write_inputs(&token, 1, pos);
  if (s.ok()) s = run_decode_step(index);
  int64_t next = 0;
  if (s.ok()) s = exe_.read_buffer(c_.next_token, std::span(reinterpret_cast<uint8_t*>(&next), sizeof next));
  DecodeStepRecord r;
  if (s.ok()) s = time_step(index, r);
  KERN_RETURN_IF_ERROR(s, at(pos));
  const load::HostTraffic& after = exe_.traffic();
  r.launches = after.launches - before.launches;
  r.host_writes = after.host_writes - before.host_writes;
  r.host_waits = after.host_waits - before.host_waits;
  records_.push_back(r);
  return check_token(next, pos);
}

Status ModelRunner::start_decode(int64_t token, uint64_t pos) {
  if (!queue_.empty())
    return make_error(ErrorKind::kUsage, std::to_string(queue_.size()) + " decode steps still in flight");
  last_timed_ = UINT64_MAX;
  next_pos_ = pos;
  KERN_RETURN_IF_ERROR(write_inputs(&token, 1, pos), at(pos));
  return {};
}

Status ModelRunner::enqueue_decode() {
  if (queue_.size() >= load::kReadbackSlots)
    return make_error(ErrorKind::kUsage, "more than " + std::to_string(load::kReadbackSlots) +
                                             " decode steps in flight");
  const load::HostTraffic before = exe_.traffic();
  Pending p{next_pos_, static_cast<uint32_t>(steps_ % load::kReadbackSlots), steps_, {}};
  Status s = run_decode_step(p.index);
  if (s.ok()) s = exe_.read_buffer_async(c_.next_token, p.slot, sizeof(int64_t));
  KERN_RETURN_IF_ERROR(s, at(p.pos));
  const load::HostTraffic& after = exe_.traffic();
  p.record.launches = after.launches - before.launches;
  p.record.host_writes = after.host_writes - before.host_writes;
  p.record.host_waits = after.host_waits - before.host_waits;
  ++steps_;
  ++next_pos_;
  queue_.push_back(p);
  return {};
}

Result<int64_t> ModelRunner::next_decoded() {
  if (queue_.empty()) return make_error(ErrorKind::kUsage, "no decode step in flight");
  const uint64_t waits_before = exe_.traffic().host_waits;
  // Popped only after its wait: a failed wait leaves the step queued, so
  // discard_in_flight still drains it.
  KERN_ASSIGN_OR_RETURN(auto bytes, exe_.wait_readback(queue_.front().slot), at(queue_.front().pos));
  Pending p = queue_.front();
  queue_.pop_front();
  int64_t next = 0;
  std::memcpy(&next, bytes.data(), sizeof next);
  if (p.prefill) {  // the id after the prompt: prefill, not a decode step
    KERN_RETURN_IF_ERROR(check_id(next, "next_token"), "prefill_last of the token at position " + std::to_string(p.pos));
    return next;
  }
  p.record.host_waits += exe_.traffic().host_waits - waits_before;
  KERN_RETURN_IF_ERROR(time_step(p.index, p.record), at(p.pos));
  records_.push_back(p.record);
  return check_token(next, p.pos);
}

Status ModelRunner::discard_in_flight() {
  StatusJoin failures;
  while (!queue_.empty()) {
    const Pending p = queue_.front();
    queue_.pop_front();
    auto waited = exe_.wait_readback(p.slot);
    if (!waited.ok()) failures.add(waited.error().with_context(at(p.pos) + " (a discarded step)"));
  }
  return failures.status();
}

Status ModelRunner::check_id(int64_t id, const char* buffer) const {
  if (id >= 0 && static_cast<uint64_t>(id) < c_.vocab) return {};
  return make_error(ErrorKind::kDevice, std::string(buffer) + " holds " + std::to_string(id) +
                                            ", outside the vocabulary [0, " + std::to_string(c_.vocab) + ")");
}

Result<int64_t> ModelRunner::spec_first_token(int64_t token, uint64_t pos) {
  if (spec_ == nullptr) return make_error(ErrorKind::kUsage, "the model has no speculative contract");
  Status st = write_inputs(&token, 1, pos);
  if (st.ok()) st = run(spec_->decode_spec, 1);
  int64_t next = 0;
  if (st.ok()) st = exe_.read_buffer(c_.next_token, {reinterpret_cast<uint8_t*>(&next), sizeof next});
  if (st.ok()) st = check_id(next, "next_token");
  if (st.ok()) st = spec_precompute(1);
  if (!st.ok()) return st.error().with_context("decode_spec at position " + std::to_string(pos));
  return next;
}

Status ModelRunner::spec_precompute(uint64_t rows) {
  if (spec_ == nullptr) return make_error(ErrorKind::kUsage, "the model has no speculative contract");
  return run(spec_->draft_precompute, rows);
}

Status ModelRunner::spec_draft(int64_t anchor, uint64_t pos) {
  if (spec_ == nullptr) return make_error(ErrorKind::kUsage, "the model has no speculative contract");
  const uint64_t B = spec_->block;
  std::fill(rows_.begin(), rows_.end(), spec_->mask_token);
  rows_[0] = anchor;
  Status st = write_inputs(rows_.data(), B, pos);  // positions, slots, seq_lens = pos + B, cu = [0, B]
  if (st.ok()) st = exe_.write_input(spec_->draft_ids, as_bytes(rows_.data(), B * sizeof(int64_t)));
  if (st.ok()) st = run(spec_->draft, B);
  if (st.ok())
    st = exe_.read_buffer(spec_->draft_tokens, {reinterpret_cast<uint8_t*>(rows_.data() + 1), (B - 1) * 8});
  for (uint64_t i = 1; st.ok() && i < B; ++i) st = check_id(rows_[i], "draft_tokens");
  if (!st.ok()) return st.error().with_context("draft at position " + std::to_string(pos));
  return {};
}

Status ModelRunner::spec_verify(uint64_t pos) {
  if (spec_ == nullptr) return make_error(ErrorKind::kUsage, "the model has no speculative contract");
  const uint64_t B = spec_->block;
  // Anchor + drafted ids; positions, slots, seq_lens and cu_seqlens_q stay as spec_draft wrote them.
  Status st = exe_.write_input(c_.token_ids, as_bytes(rows_.data(), B * sizeof(int64_t)));
  if (st.ok()) st = run(spec_->verify, B);
  if (st.ok()) st = exe_.read_buffer(c_.next_token, {reinterpret_cast<uint8_t*>(pred_.data()), B * 8});
  for (uint64_t i = 0; st.ok() && i < B; ++i) st = check_id(pred_[i], "next_token");
  if (!st.ok()) return st.error().with_context("verify at position " + std::to_string(pos));
  return {};
}

}  // namespace kern::engine
