// When a program run is captured into a graph, replayed from one, or run
// eagerly (SPEC §6 "CUDA graphs"), independent of the device: graphs are on
// by default for programs whose symbol values repeat (decode at tokens = 1,
// prefill at the chunk size), keyed by (program, symbol values); the second
// run with the same key is captured (the first one runs eagerly and so warms
// lazy device state: cublasLt heuristics, shared-memory attributes), later
// ones replay. Input writes stay outside the graph (Executable::write_input
// copies before run_program). A replay whose symbol values differ from the
// capture's is refused. A failed capture, instantiation or graph launch
// turns graphs off for good: the run falls back to eager once, with one
// warning, and never retries (no capture loop).
//
// Pure bookkeeping over plain data: the device does the capture
// (Device::begin_capture / end_capture / launch_graph).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace kern::load {

/// A device's handle of an instantiated graph (cuda: a CUgraphExec); 0 = none.
using GraphHandle = uint64_t;

/// What to do with one run_program call.
enum class GraphAction : uint8_t {
  kEager,    ///< launch every step now
  kCapture,  ///< capture the launches into a graph, then launch the graph
  kReplay,   ///< launch the graph captured for this key
};

/// A captured graph and the key it was captured under.
struct CapturedGraph {
  uint32_t program = 0;
  std::vector<uint64_t> symbols;  ///< symbol values at capture, indexed like Plan.symbols
  GraphHandle handle = 0;
};

/// The decision for one run; `graph` is set for kReplay.
struct GraphDecision {
  GraphAction action = GraphAction::kEager;
  const CapturedGraph* graph = nullptr;  ///< valid until the policy changes
};

/// Limits of the policy.
struct GraphPolicyOptions {
  bool enabled = true;          ///< false: always eager (`kern-run --eager`, or a device without graphs)
  uint32_t capture_after = 1;   ///< eager runs of a key before it is captured (>= 0)
  size_t max_graphs = 8;        ///< captured graphs kept at most; further keys run eagerly
  size_t max_tracked_keys = 64;  ///< distinct keys counted at most (bounds memory for varying prompts)
};

/// Refuses a replay of `graph` for (program, symbols) unless both equal the
/// capture's key. Error (kUsage): "graph of program 1 was captured at symbol
/// values [1], this run has [2]; refusing to replay it".
Status check_replay(const CapturedGraph& graph, uint32_t program, std::span<const uint64_t> symbols);

/// The graph bookkeeping of one Executable. Not thread-safe (like Executable).
class GraphPolicy {
 public:
  /// A policy with `options` (defaults: on, capture on the second run of a key, 8 graphs).
  explicit GraphPolicy(GraphPolicyOptions options = {});

  /// Whether graphs may still be used (enabled and no failure yet).
  bool active() const { return options_.enabled && !failed_; }

  /// Decides for a run of `program` at `symbols`; counts the run.
  /// kReplay when a graph holds this key; kCapture when the key has run
  /// eagerly `capture_after` times and fewer than max_graphs exist; else kEager.
  GraphDecision decide(uint32_t program, std::span<const uint64_t> symbols);

  /// Records the graph captured for (program, symbols) after a kCapture decision.
  void add(uint32_t program, std::span<const uint64_t> symbols, GraphHandle handle);

  /// A capture, instantiation or graph launch of `program` failed with
  /// `error`: turns graphs off for good. Returns the one warning to print
  /// ("CUDA graphs disabled: capturing program 'decode' failed: <error>;
  /// running eagerly"), or "" when graphs were already off (never twice).
  std::string fail(const std::string& program_name, const std::string& what, const Error& error);

  /// Removes and returns every captured graph (for the device to destroy).
  std::vector<CapturedGraph> take_graphs();

  /// Graphs captured so far (kept).
  const std::vector<CapturedGraph>& graphs() const { return graphs_; }

 private:
  struct Seen {
    uint32_t program = 0;
    std::vector<uint64_t> symbols;
    uint32_t runs = 0;
  };
  GraphPolicyOptions options_;
  bool failed_ = false;
  std::vector<CapturedGraph> graphs_;  ///< short: scanned linearly
  std::vector<Seen> seen_;             ///< eager runs per key, at most max_tracked_keys
};

}  // namespace kern::load
