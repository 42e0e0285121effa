// Greedy generation through the Qwen3 caller contract (SPEC §7): chunked
// prefill of the first n-1 prompt tokens through `prefill`, the last prompt
// token through `decode` (the first generated id), then one `decode` per
// further id, until `steps` ids or a stop id (an end token). Batch size 1
// with an identity block table (qwen3_driver.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "common/result.h"
#include "kern-load/executable.h"
#include "kern-run/qwen3_contract.h"
#include "kern-run/qwen3_driver.h"
#include "kern-run/spec_stats.h"

namespace kern::run {

/// Default prefill chunk in tokens (clamped to the `tokens` bound).
inline constexpr uint64_t kDefaultChunk = 512;
/// Default capacity cap in tokens: capacity = min(this, 16 x block_table pages).
inline constexpr uint64_t kDefaultCapacityCap = 4096;

/// Receives generation events as they happen (streaming output, progress).
/// Called on the generating thread, between launches; must not throw.
class GenerateObserver {
 public:
  virtual ~GenerateObserver() = default;
  /// After each prefill chunk: prompt tokens prefilled so far, of `total`
  /// (the prompt's n - 1 tokens; the last one goes through decode).
  virtual void on_prefill_progress(uint64_t done, uint64_t total) { (void)done, (void)total; }
  /// Each generated id, in order, including a final stop id.
  virtual void on_token(int64_t id) { (void)id; }
  /// Checked after each on_token: an error here (the streamed output cannot
  /// be written) ends generation with that error.
  virtual Status status() const { return {}; }
};

/// What to generate.
struct GenerateRequest {
  std::vector<int64_t> prompt_ids;
  uint64_t steps = 0;  ///< most generated ids wanted (>= 1)
  uint64_t chunk = kDefaultChunk;  ///< prefill chunk in tokens (>= 1; clamped to tokens.max)
  uint64_t capacity = 0;  ///< state capacity the executable was loaded with, in tokens
  std::vector<int64_t> stop_ids;  ///< generation ends after producing one of these (kept in generated_ids)
  GenerateObserver* observer = nullptr;  ///< borrowed, may be null
  /// true: the synchronous decode loop (host writes each step's inputs and
  /// waits for its token before the next step, `--sync`); false: the
  /// asynchronous one (qwen3_driver.h). Both give the same ids.
  bool sync = false;
};

/// What happened. Prefill time covers the prefill chunks and the decode of
/// the last prompt token (time to the first generated id); decode time
/// covers the remaining generated ids (until the last one is taken; surplus
/// steps of the asynchronous loop are drained afterwards, untimed).
struct GenerateResult {
  std::vector<int64_t> generated_ids;
  bool stopped = false;        ///< ended on a stop id (else after `steps` ids)
  uint64_t chunk = 0;          ///< chunk actually used
  uint64_t prefill_chunks = 0; ///< prefill program runs
  double prefill_ms = 0;
  double decode_ms = 0;        ///< total over decode_steps
  uint64_t decode_steps = 0;   ///< generated ids - 1
  bool sync = false;           ///< the synchronous loop ran
  uint64_t surplus_steps = 0;  ///< asynchronous steps run after the stop id and discarded
  DecodeStats stats;           ///< steady-state figures per decode step
  std::optional<SpecStats> spec;  ///< speculative rounds (kern-run --spec, spec_generate.h); else empty
};

/// The decode phase alone, shared by generate and kern-run bench: decodes
/// `token` at position `pos` and each generated id after it until `steps`
/// ids or a stop id (kept). `on_token(id, index)` sees each id as it is
/// taken; an error it returns ends the loop with that error. Asynchronous
/// unless `sync`; steps beyond a stop id that were already queued are
/// drained before returning (and counted in `surplus`). Steps are never
/// issued past `steps`, so no step writes KV beyond pos + steps - 1.
struct DecodeLoop {
  std::vector<int64_t> ids;
  bool stopped = false;
  uint64_t surplus = 0;
};
Result<DecodeLoop> decode_loop(Qwen3Driver& driver, int64_t token, uint64_t pos, uint64_t steps,
                               std::span<const int64_t> stop_ids, bool sync,
                               const std::function<Status(int64_t, uint64_t)>& on_token);

/// Checks a request before anything runs. Errors (kUsage): empty prompt;
/// steps == 0; chunk == 0; a prompt id outside [0, vocab) (vocab = the
/// `logits` buffer's last dimension = the embedding's rows; names the index
/// and the id); prompt + steps > capacity (names both); capacity > 16 x
/// block_table pages.
Status check_request(const Qwen3Contract& c, const GenerateRequest& r);

/// The default capacity of a contract: min(4096, 16 x block_table pages).
uint64_t default_capacity(const Qwen3Contract& c);

/// Runs check_request, writes the identity block table, then generates.
/// Errors from the executable get the phase as context ("prefill chunk at
/// position 512: ..."); a generated id outside [0, vocab) is an error; so is
/// an error the observer reports (GenerateObserver::status).
Result<GenerateResult> generate(load::Executable& exe, const Qwen3Contract& c, const GenerateRequest& r);

}  // namespace kern::run
