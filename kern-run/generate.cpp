// Greedy generation through the Qwen3 caller contract (generate.h).
#include "kern-run/generate.h"
#include "kern-run/stopwatch.h"

#include "kern-run/qwen3_driver.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

namespace kern::run {

uint64_t default_capacity(const Qwen3Contract& c) {
  return std::min(kDefaultCapacityCap, c.table_tokens());
}

Status check_request(const Qwen3Contract& c, const GenerateRequest& r) {
  auto usage = [](const std::string& m) { return make_error(ErrorKind::kUsage, m); };
  if (r.prompt_ids.empty()) return usage("the prompt is empty: give a prompt (--prompt, --prompt-file, stdin or --prompt-ids)");
  if (r.steps == 0) return usage("--steps must be at least 1");
  if (r.chunk == 0) return usage("--chunk must be at least 1");
  for (size_t i = 0; i < r.prompt_ids.size(); ++i)
    if (r.prompt_ids[i] < 0 || static_cast<uint64_t>(r.prompt_ids[i]) >= c.vocab)
      return usage("prompt id " + std::to_string(r.prompt_ids[i]) + " at index " + std::to_string(i) +
                   " is outside the vocabulary [0, " + std::to_string(c.vocab) + ") (the embedding's rows)");
  const uint64_t table_tokens = c.table_tokens();
  if (r.capacity == 0) return usage("--capacity must be at least 1");
  if (r.capacity > table_tokens)
    return usage("capacity " + std::to_string(r.capacity) + " tokens exceeds the block table (" +
                 std::to_string(c.block_table_pages) + " pages x " + std::to_string(kKvBlockTokens) + " = " +
                 std::to_string(table_tokens) + " tokens)");
  // prompt + steps > capacity, without overflowing u64 (--steps 18446744073709551612).
  const uint64_t n = r.prompt_ids.size();
  if (r.steps > r.capacity || n > r.capacity - r.steps) {
    const bool sum_fits = n <= UINT64_MAX - r.steps;
    return usage("prompt (" + std::to_string(n) + " tokens) + steps (" + std::to_string(r.steps) + ")" +
                 (sum_fits ? " = " + std::to_string(n + r.steps) + " tokens" : "") + " exceeds the capacity " +
                 std::to_string(r.capacity) + " tokens");
  }
  if (r.capacity > static_cast<uint64_t>(INT32_MAX)) return usage("capacity exceeds the i32 range of seq_lens");
  return {};
}

Result<DecodeLoop> decode_loop(Qwen3Driver& driver, int64_t token, uint64_t pos, uint64_t steps,
                               std::span<const int64_t> stop_ids, bool sync,
                               const std::function<Status(int64_t, uint64_t)>& on_token) {
  DecodeLoop out;
  out.ids.reserve(steps);
  auto take = [&](int64_t id) -> Status {
    out.ids.push_back(id);
    KERN_RETURN_IF_ERROR(on_token(id, out.ids.size() - 1));
    out.stopped = std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end();
    return {};
  };
  if (sync) {
    for (uint64_t step = 0; step < steps && !out.stopped; ++step) {
      KERN_ASSIGN_OR_RETURN(auto next, driver.decode(token, pos + step));
      token = next;
      KERN_RETURN_IF_ERROR(take(token));
    }
    return out;
  }
  // Asynchronous: keep kDecodeLookahead steps queued (step k + 1 is issued
  // before step k's token is read); never issue a step beyond `steps`.
  KERN_RETURN_IF_ERROR(driver.start_decode(token, pos));
  uint64_t issued = 0;
  Status s;
  while (s.ok() && out.ids.size() < steps && !out.stopped) {
    while (s.ok() && issued < steps && driver.in_flight() < kDecodeLookahead) {
      s = driver.enqueue_decode();
      issued += s.ok() ? 1 : 0;
    }
    if (!s.ok()) break;
    auto next = driver.next_decoded();
    if (!next.ok()) {
      s = next.error();
      break;
    }
    s = take(*next);
  }
  out.surplus = driver.in_flight();
  // The surplus steps wrote only beyond the sequence: let them finish (the
  // executable is idle on return) and drop their tokens.
  Status drained = driver.discard_in_flight();
  KERN_RETURN_IF_ERROR(s);
  KERN_RETURN_IF_ERROR(drained);
  return out;
}

Result<GenerateResult> generate(load::Executable& exe, const Qwen3Contract& c, const GenerateRequest& r) {
  KERN_RETURN_IF_ERROR(check_request(c, r));
  GenerateResult out;
  Qwen3Driver driver(exe, c, r.chunk);
  out.chunk = driver.chunk();
  out.sync = r.sync;
  KERN_RETURN_IF_ERROR(driver.write_block_table());
  const uint64_t n = r.prompt_ids.size();
  std::function<void(uint64_t, uint64_t)> progress;
  if (r.observer != nullptr) progress = [&r](uint64_t done, uint64_t total) { r.observer->on_prefill_progress(done, total); };
  auto t0 = Clock::now();
  // Chunked prefill of the first n - 1 tokens: fills the KV cache only.
  KERN_ASSIGN_OR_RETURN(auto chunks,
                        driver.prefill(std::span(r.prompt_ids).first(n - 1), 0, r.observer ? &progress : nullptr));
  out.prefill_chunks = chunks;
  // Decode: the last prompt token (the first generated id), then each generated id.
  Clock::time_point t_decode, t_last;
  auto on_token = [&](int64_t id, uint64_t index) -> Status {
    t_last = Clock::now();
    if (index == 0) {
      out.prefill_ms = ms_since(t0);
      t_decode = t_last;
    }
    if (r.observer == nullptr) return {};
    r.observer->on_token(id);
    return r.observer->status();
  };
  KERN_ASSIGN_OR_RETURN(auto loop,
                        decode_loop(driver, r.prompt_ids.back(), n - 1, r.steps, r.stop_ids, r.sync, on_token));
  out.generated_ids = std::move(loop.ids);
  out.stopped = loop.stopped;
  out.surplus_steps = loop.surplus;
  out.decode_steps = out.generated_ids.size() - 1;
  out.decode_ms = out.decode_steps > 0 ? std::chrono::duration<double, std::milli>(t_last - t_decode).count() : 0.0;
  out.stats = average_decode(steady_part(driver.records()));
  return out;
}

}  // namespace kern::run
