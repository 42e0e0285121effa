// The blocking generation call kern-run and its benchmark use: one request
// added to an idle Engine and stepped until it finishes, with its events
// passed to an observer as they happen (streaming output, progress).
#pragma once

#include <cstdint>

#include "common/result.h"
#include "kern-engine/engine.h"

namespace kern::engine {

/// Receives generation events as they happen. Called on the generating
/// thread, between steps; must not throw.
class GenerateObserver {
 public:
  virtual ~GenerateObserver() = default;
  /// After each prefill chunk: prompt tokens prefilled so far, of `total`
  /// (the prompt's n - 1 tokens; the last one goes through decode).
  virtual void on_prefill_progress(uint64_t done, uint64_t total) { (void)done, (void)total; }
  /// Each generated id, in order, including a final stop id.
  virtual void on_token(int64_t id) { (void)id; }
  /// Checked after each step's ids: an error here (the streamed output
  /// cannot be written) aborts the request and generate returns it.
  virtual Status status() const { return {}; }
};

/// Adds `r` to `engine` (which must be idle: kUsage otherwise) and steps it
/// to the end. Returns the sequence's result. Errors: add_request's; the
/// request's failure (with its phase as context: "prefill chunk at position
/// 512: ...", "decode at position P", "draft at position P", "verify at
/// position P"; a generated id outside [0, vocab) is kDevice); the
/// observer's status() (the request is aborted and drained first).
Result<SequenceResult> generate(Engine& engine, Request r, GenerateObserver* observer = nullptr);

}  // namespace kern::engine
