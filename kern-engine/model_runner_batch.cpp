// The model runner's batched decode (model_runner.h, docs/batching.md): the
// only writer of the batch buffers. Host writes happen only when the batch
// composition changes (batch_reset, batch_join, batch_leave); a step itself
// is one decode_batch run plus an asynchronous readback of its rows' ids.
#include <algorithm>
#include <cstring>
#include <string>

#include "kern-engine/host_bytes.h"
#include "kern-engine/model_runner.h"

namespace kern::engine {
namespace {

Error no_batch() {
  return make_error(ErrorKind::kUsage, "the plan has no batched decode program 'decode_batch' (regenerate the "
                                       "manifest with examples/gen_qwen3_manifest.py --max-batch N)");
}

}  // namespace

Status ModelRunner::batch_reset() {
  if (batch_ == nullptr) return no_batch();
  // A prefill_last's readback may be in flight (the batched engine takes
  // its id a step later): it reads no batch buffer.
  if (!batch_queue_.empty() || std::any_of(queue_.begin(), queue_.end(), [](const Pending& p) { return !p.prefill; }))
    return make_error(ErrorKind::kUsage, "decode steps still in flight");
  const uint64_t rows = batch_->max_batch;
  const std::vector<int64_t> zeros(rows, 0), none(rows, -1);
  const std::vector<int32_t> lens(rows, 0), tables(rows * batch_->pages_per_seq, -1);
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->token_ids, as_bytes(zeros.data(), rows * 8)));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->positions, as_bytes(zeros.data(), rows * 8)));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->slot_mapping, as_bytes(none.data(), rows * 8)));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->seq_lens, as_bytes(lens.data(), rows * 4)));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->block_tables, as_bytes(tables.data(), tables.size() * 4)));
  return {};
}

Status ModelRunner::batch_join(uint32_t row, int64_t token, uint64_t pos, std::span<const int32_t> pages) {
  if (batch_ == nullptr) return no_batch();
  if (row >= batch_->max_batch || pages.size() > batch_->pages_per_seq)
    return make_error(ErrorKind::kUsage, "batch row " + std::to_string(row) + " with " + std::to_string(pages.size()) +
                                             " pages is outside the batch (" + std::to_string(batch_->max_batch) +
                                             " rows of " + std::to_string(batch_->pages_per_seq) + " pages)");
  std::vector<int32_t> table(batch_->pages_per_seq, -1);
  std::copy(pages.begin(), pages.end(), table.begin());
  const int64_t position = static_cast<int64_t>(pos);
  const int64_t slot = slot_through(pages, pos);
  const int32_t seq_len = static_cast<int32_t>(pos + 1);  // capacity <= INT32_MAX: check_capacity
  const uint64_t r8 = uint64_t{row} * 8, r4 = uint64_t{row} * 4;
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->block_tables, as_bytes(table.data(), table.size() * 4),
                                        r4 * batch_->pages_per_seq));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->token_ids, as_bytes(&token, 8), r8));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->positions, as_bytes(&position, 8), r8));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->slot_mapping, as_bytes(&slot, 8), r8));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->seq_lens, as_bytes(&seq_len, 4), r4));
  return {};
}

Status ModelRunner::batch_leave(uint32_t row) {
  if (batch_ == nullptr) return no_batch();
  if (row >= batch_->max_batch)
    return make_error(ErrorKind::kUsage, "batch row " + std::to_string(row) + " is outside the batch");
  const int64_t zero = 0, none = -1;
  const int32_t len = 0;
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->positions, as_bytes(&zero, 8), uint64_t{row} * 8));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->slot_mapping, as_bytes(&none, 8), uint64_t{row} * 8));
  KERN_RETURN_IF_ERROR(exe_.write_input(batch_->seq_lens, as_bytes(&len, 4), uint64_t{row} * 4));
  return {};
}

Status ModelRunner::enqueue_batch(uint64_t rows) {
  if (batch_ == nullptr) return no_batch();
  if (rows < 1 || rows > batch_->max_batch)
    return make_error(ErrorKind::kUsage, "batch of " + std::to_string(rows) + " rows is outside [1, " +
                                             std::to_string(batch_->max_batch) + "]");
  if (batch_queue_.size() + queue_.size() >= load::kReadbackSlots)
    return make_error(ErrorKind::kUsage, "more than " + std::to_string(load::kReadbackSlots) +
                                             " decode steps in flight");
  const BatchPending p{rows, static_cast<uint32_t>(steps_ % load::kReadbackSlots)};
  symbols_[c_.tokens_symbol] = 1;
  symbols_[batch_->batch_symbol] = rows;
  Status s = exe_.run_program(batch_->decode_batch, symbols_);
  symbols_[batch_->batch_symbol] = 1;
  if (s.ok()) s = exe_.read_buffer_async(c_.next_token, p.slot, rows * sizeof(int64_t));
  KERN_RETURN_IF_ERROR(s, "decode_batch over " + std::to_string(rows) + " rows");
  ++steps_;
  batch_queue_.push_back(p);
  return {};
}

Result<std::vector<int64_t>> ModelRunner::next_batch() {
  if (batch_queue_.empty()) return make_error(ErrorKind::kUsage, "no batched decode step in flight");
  // Popped only after its wait: a failed wait leaves it for discard_batch.
  KERN_ASSIGN_OR_RETURN(auto bytes, exe_.wait_readback(batch_queue_.front().slot), "decode_batch");
  const BatchPending p = batch_queue_.front();
  batch_queue_.pop_front();
  std::vector<int64_t> ids(p.rows);
  std::memcpy(ids.data(), bytes.data(), p.rows * sizeof(int64_t));
  return ids;
}

Status ModelRunner::discard_batch() {
  StatusJoin failures;
  while (!batch_queue_.empty()) {
    const BatchPending p = batch_queue_.front();
    batch_queue_.pop_front();
    auto waited = exe_.wait_readback(p.slot);
    if (!waited.ok()) failures.add(waited.error().with_context("decode_batch (a discarded step)"));
  }
  return failures.status();
}

}  // namespace kern::engine
