// The caller's speculative round (SPEC §8; spec_generate.h).
#include "kern-run/spec_generate.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "kern-run/qwen3_driver.h"
#include "kern-run/stopwatch.h"

namespace kern::run {

namespace {

std::span<const uint8_t> as_bytes(const int64_t* p, size_t n) {
  return {reinterpret_cast<const uint8_t*>(p), n * sizeof(int64_t)};
}

/// Runs the speculative loop over one sequence; members are the state a
/// round carries (the anchor and its position).
class SpecLoop {
 public:
  SpecLoop(load::Executable& exe, const Qwen3Contract& c, const SpecContract& s, Qwen3Driver& driver)
      : exe_(exe), c_(c), s_(s), driver_(driver) {
    symbols_.assign(exe.plan().symbols()->size(), 0);
    rows_.resize(s.block);
    pred_.resize(s.block);
  }

  /// draft_precompute over the `rows` rows whose inputs are in place.
  Status precompute(uint64_t rows) {
    symbols_[c_.tokens_symbol] = rows;
    return exe_.run_program(s_.draft_precompute, symbols_);
  }

  /// The last prompt token at `pos` through decode_spec, then its row's
  /// precompute. Returns the first generated id.
  Result<int64_t> first_token(int64_t token, uint64_t pos) {
    Status st = driver_.write_inputs(&token, 1, pos);
    symbols_[c_.tokens_symbol] = 1;
    if (st.ok()) st = exe_.run_program(s_.decode_spec, symbols_);
    int64_t next = 0;
    if (st.ok()) st = exe_.read_buffer(c_.next_token, {reinterpret_cast<uint8_t*>(&next), sizeof next});
    if (st.ok()) st = check_id(next, "next_token");
    if (st.ok()) st = precompute(1);
    if (!st.ok()) return st.error().with_context("decode_spec at position " + std::to_string(pos));
    return next;
  }

  /// Draft and verify of one round from `anchor` at position `pos` (pos +
  /// block <= capacity): fills round's times and accepted count and the
  /// predictions (predictions()).
  Status round(int64_t anchor, uint64_t pos, SpecRound& round) {
    const uint64_t B = s_.block;
    const std::string where = " at position " + std::to_string(pos);
    auto t0 = Clock::now();
    std::fill(rows_.begin(), rows_.end(), s_.mask_token);
    rows_[0] = anchor;
    symbols_[c_.tokens_symbol] = B;
    Status st = driver_.write_inputs(rows_.data(), B, pos);  // positions, slots, seq_lens = pos + B, cu = [0, B]
    if (st.ok()) st = exe_.write_input(s_.draft_ids, as_bytes(rows_.data(), B));
    if (st.ok()) st = exe_.run_program(s_.draft, symbols_);
    if (st.ok()) st = exe_.read_buffer(s_.draft_tokens, {reinterpret_cast<uint8_t*>(rows_.data() + 1), (B - 1) * 8});
    for (uint64_t i = 1; st.ok() && i < B; ++i) st = check_id(rows_[i], "draft_tokens");
    if (!st.ok()) return st.error().with_context("draft" + where);
    auto t1 = Clock::now();
    round.draft_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    st = exe_.write_input(c_.token_ids, as_bytes(rows_.data(), B));  // anchor + drafted; the rest stays
    if (st.ok()) st = exe_.run_program(s_.verify, symbols_);
    if (st.ok()) st = exe_.read_buffer(c_.next_token, {reinterpret_cast<uint8_t*>(pred_.data()), B * 8});
    for (uint64_t i = 0; st.ok() && i < B; ++i) st = check_id(pred_[i], "next_token");
    if (!st.ok()) return st.error().with_context("verify" + where);
    round.verify_ms = ms_since(t1);
    uint64_t k = 0;
    while (k + 1 < B && pred_[k] == rows_[k + 1]) ++k;
    round.accepted = k;
    return {};
  }

  /// The predictions of the last round (block ids; prediction i follows row i).
  const std::vector<int64_t>& predictions() const { return pred_; }

 private:
  Status check_id(int64_t id, const char* buffer) const {
    if (id >= 0 && static_cast<uint64_t>(id) < c_.vocab) return {};
    return make_error(ErrorKind::kDevice, std::string(buffer) + " holds " + std::to_string(id) +
                                              ", outside the vocabulary [0, " + std::to_string(c_.vocab) + ")");
  }

  load::Executable& exe_;
  const Qwen3Contract& c_;
  const SpecContract& s_;
  Qwen3Driver& driver_;
  std::vector<uint64_t> symbols_;
  std::vector<int64_t> rows_;  ///< anchor + drafted ids (block)
  std::vector<int64_t> pred_;  ///< verify's predictions (block)
};

}  // namespace

Result<GenerateResult> generate_spec(load::Executable& exe, const Qwen3Contract& c, const SpecContract& s,
                                     const GenerateRequest& r) {
  KERN_RETURN_IF_ERROR(check_request(c, r));
  GenerateResult out;
  out.spec = SpecStats{};
  SpecStats& stats = *out.spec;
  stats.block = s.block;
  Qwen3Driver driver(exe, c, r.chunk);
  out.chunk = driver.chunk();
  out.sync = r.sync;  // the fallback's decode loop; rounds always read their ids back
  KERN_RETURN_IF_ERROR(driver.write_block_table());
  SpecLoop loop(exe, c, s, driver);
  const uint64_t n = r.prompt_ids.size();

  // Prefill: every chunk's tapped rows go through draft_precompute right
  // away (the chunk's positions and slots are still in place).
  std::function<void(uint64_t, uint64_t)> progress;
  if (r.observer != nullptr) progress = [&r](uint64_t done, uint64_t total) { r.observer->on_prefill_progress(done, total); };
  std::function<Status(uint64_t)> after_chunk = [&](uint64_t len) {
    auto t = Clock::now();
    Status st = loop.precompute(len);
    stats.prompt_precompute_ms += ms_since(t);
    return st;
  };
  auto t0 = Clock::now();
  KERN_ASSIGN_OR_RETURN(out.prefill_chunks, driver.prefill(std::span(r.prompt_ids).first(n - 1), 0,
                                                            r.observer ? &progress : nullptr, &after_chunk));

  bool done = false;
  Clock::time_point t_first, t_last;
  auto emit = [&](int64_t id) -> Status {
    t_last = Clock::now();
    out.generated_ids.push_back(id);
    out.stopped = std::find(r.stop_ids.begin(), r.stop_ids.end(), id) != r.stop_ids.end();
    done = out.stopped || out.generated_ids.size() >= r.steps;
    if (r.observer == nullptr) return {};
    r.observer->on_token(id);
    return r.observer->status();
  };

  KERN_ASSIGN_OR_RETURN(int64_t anchor, loop.first_token(r.prompt_ids.back(), n - 1));
  KERN_RETURN_IF_ERROR(emit(anchor));
  out.prefill_ms = ms_since(t0);
  t_first = t_last;
  uint64_t pos = n;  // the anchor's position: the target's KV and the draft's context hold [0, pos)

  while (!done) {
    if (pos + s.block > r.capacity) {
      // The block would cross the capacity: plain decode for the rest.
      auto on_token = [&](int64_t id, uint64_t) { return emit(id); };
      KERN_ASSIGN_OR_RETURN(auto rest, decode_loop(driver, anchor, pos, r.steps - out.generated_ids.size(),
                                                   r.stop_ids, r.sync, on_token));
      stats.fallback_steps = rest.ids.size();
      out.surplus_steps = rest.surplus;
      break;
    }
    SpecRound round;
    KERN_RETURN_IF_ERROR(loop.round(anchor, pos, round));
    const std::vector<int64_t>& pred = loop.predictions();
    for (uint64_t i = 0; i <= round.accepted && !done; ++i) {
      KERN_RETURN_IF_ERROR(emit(pred[i]));
      ++round.emitted;
    }
    if (!done) {
      auto t = Clock::now();
      KERN_RETURN_IF_ERROR(loop.precompute(round.accepted + 1), "draft_precompute at position " + std::to_string(pos));
      round.precompute_ms = ms_since(t);
    }
    anchor = pred[round.accepted];
    pos += round.accepted + 1;
    stats.rounds.push_back(round);
  }
  out.decode_steps = out.generated_ids.size() - 1;
  out.decode_ms = out.decode_steps > 0 ? std::chrono::duration<double, std::milli>(t_last - t_first).count() : 0.0;
  out.stats = average_decode(steady_part(driver.records()));
  return out;
}

}  // namespace kern::run
