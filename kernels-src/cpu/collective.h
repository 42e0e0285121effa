// What the cpu reference device's collective extern ops need from the
// transport (docs/parallel.md): this rank's place in the world and an
// all-gather. The summation order of the all-reduce is the kernels' own
// (collective_ops.cpp), never the transport's, so every rank adds the same
// values in the same order and gets the same bits. kern-load implements it
// over Gloo (kern-load/collective/); tests may pass an in-process fake.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/result.h"

namespace kern::cpu {

/// What a rank's collectives cost so far (bench reports the share of a step).
struct CollectiveStats {
  uint64_t calls = 0;        ///< all-gathers run
  uint64_t bytes_sent = 0;   ///< bytes this rank sent to its peers
  double wait_ms = 0;        ///< wall time inside the all-gathers (transfer plus waiting for peers)
};

/// One rank's endpoint of a tensor-parallel world. Not thread-safe: one
/// collective at a time, on the thread that runs the plan.
class Collective {
 public:
  virtual ~Collective() = default;
  /// This rank, in [0, world()).
  virtual uint32_t rank() const = 0;
  /// Ranks in the world (>= 1).
  virtual uint32_t world() const = 0;
  /// out[r * size_bytes .. (r + 1) * size_bytes) = rank r's `in` for every
  /// rank r (this rank's included); every rank passes the same size_bytes.
  /// `out` holds world() * size_bytes bytes and does not overlap `in`.
  /// Errors (kind kDevice): a rank that left or did not answer within the
  /// transport's timeout, named when the transport knows which.
  virtual Status all_gather(const void* in, void* out, size_t size_bytes) = 0;
  /// Returns when every rank has called it, or fails after `timeout_ms`
  /// naming the ranks that did not come: the barrier after loading, which
  /// may take far longer than one collective's wait.
  virtual Status barrier(uint32_t timeout_ms) = 0;
  /// Totals of the all-gathers since the connection (the barrier excluded).
  virtual CollectiveStats stats() const { return {}; }
};

}  // namespace kern::cpu
