#include "kern-run/qwen3_driver.h"

#include <algorithm>
#include <string>

namespace kern::run {
namespace {

std::span<const uint8_t> as_bytes(const void* p, size_t n) { return {static_cast<const uint8_t*>(p), n}; }

}  // namespace

Qwen3Driver::Qwen3Driver(load::Executable& exe, const Qwen3Contract& c, uint64_t chunk)
    : exe_(exe), c_(c), chunk_(std::max<uint64_t>(1, std::min(chunk, c.tokens_max))) {
  token_ids_.resize(chunk_);
  positions_.resize(chunk_);
  symbols_.assign(exe.plan().symbols()->size(), 0);
}

Status Qwen3Driver::write_block_table() {
  std::vector<int32_t> table(c_.block_table_pages);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  return exe_.write_input(c_.block_table, as_bytes(table.data(), table.size() * sizeof(int32_t)));
}

Status Qwen3Driver::write_inputs(const int64_t* ids, uint64_t n, uint64_t pos) {
  for (uint64_t i = 0; i < n; ++i) {
    token_ids_[i] = ids[i];
    positions_[i] = static_cast<int64_t>(pos + i);  // identity block table: slot == position
  }
  size_t bytes = n * sizeof(int64_t);
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.token_ids, as_bytes(token_ids_.data(), bytes)));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.positions, as_bytes(positions_.data(), bytes)));
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.slot_mapping, as_bytes(positions_.data(), bytes)));
  int32_t seq_len = static_cast<int32_t>(pos + n);  // capacity <= INT32_MAX: check_request
  KERN_RETURN_IF_ERROR(exe_.write_input(c_.seq_lens, as_bytes(&seq_len, sizeof seq_len)));
  if (cu_seqlens_len_ != n) {  // decode steps keep [0, 1]: written once
    int32_t cu_seqlens[2] = {0, static_cast<int32_t>(n)};
    KERN_RETURN_IF_ERROR(exe_.write_input(c_.cu_seqlens_q, as_bytes(cu_seqlens, sizeof cu_seqlens)));
    cu_seqlens_len_ = n;
  }
  return {};
}

Result<uint64_t> Qwen3Driver::prefill(std::span<const int64_t> ids, uint64_t start,
                                      const std::function<void(uint64_t, uint64_t)>* progress) {
  uint64_t chunks = 0;
  for (uint64_t done = 0; done < ids.size(); done += chunk_) {
    uint64_t len = std::min<uint64_t>(chunk_, ids.size() - done);
    Status s = write_inputs(ids.data() + done, len, start + done);
    symbols_[c_.tokens_symbol] = len;
    if (s.ok()) s = exe_.run_program(c_.prefill, symbols_);
    if (!s.ok()) return s.error().with_context("prefill chunk at position " + std::to_string(start + done));
    ++chunks;
    if (progress != nullptr) (*progress)(done + len, ids.size());
  }
  return chunks;
}

Result<int64_t> Qwen3Driver::decode(int64_t token, uint64_t pos) {
  symbols_[c_.tokens_symbol] = 1;
  Status s = write_inputs(&token, 1, pos);
  if (s.ok()) s = exe_.run_program(c_.decode, symbols_);
  int64_t next = 0;
  if (s.ok()) s = exe_.read_buffer(c_.next_token, std::span(reinterpret_cast<uint8_t*>(&next), sizeof next));
  if (!s.ok()) return s.error().with_context("decode at position " + std::to_string(pos));
  if (next < 0 || static_cast<uint64_t>(next) >= c_.vocab)
    return make_error(ErrorKind::kDevice, "decode at position " + std::to_string(pos) + ": next_token " +
                                              std::to_string(next) + " is outside the vocabulary [0, " +
                                              std::to_string(c_.vocab) + ")");
  return next;
}

}  // namespace kern::run
