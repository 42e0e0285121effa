// Ranks as processes (docs/parallel.md "Ranks"): `kern-run --tp N` is rank 0
// and starts ranks 1 .. N-1 itself, as its direct children (fork + exec of
// its own binary with the same arguments plus --tp-rank R and
// --tp-rendezvous DIR; no shell, launcher or store process in between).
// Every rank runs the same deterministic engine on the same arguments, so
// only the collectives pass between them (the reason: sampling, stops and
// scheduling are already deterministic functions of the inputs, and the
// all-reduced hidden states are bit-identical on every rank).
//
// Ending: a child that exits non-zero or by a signal ends the run within a
// poll period (50 ms): rank 0 names it on stderr, kills the other children
// and exits 1. A hung rank is found by the Gloo wait timeout of the rank
// that waits on it (kTpWaitTimeoutMs), which then fails naming it. Rank 0's
// death (SIGKILL included) kills the children through PR_SET_PDEATHSIG;
// SIGINT / SIGTERM to rank 0 kill them before rank 0 ends.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace kern::run {

/// How long a rank waits for a peer (the rendezvous, each collective)
/// before it fails naming the peer: below the 10 s the issue allows.
inline constexpr uint32_t kTpWaitTimeoutMs = 5000;

/// Records the process's argv (main calls it first): ranks 1 .. N-1 are
/// started with these arguments. Borrowed: argv outlives the process.
void set_process_args(int argc, char** argv);

/// Rank 0's children and the run's rendezvous directory.
class RankGroup {
 public:
  /// Makes a private rendezvous directory (mkdtemp under $TMPDIR or /tmp)
  /// and starts ranks 1 .. world-1, then a thread that watches them.
  /// Errors (kIo): the directory, fork or the binary's path.
  static Result<RankGroup*> start(uint32_t world);
  /// The rendezvous directory passed to every rank.
  const std::string& rendezvous_dir() const { return dir_; }
  /// Removes the rendezvous directory (once every rank has joined: nothing
  /// reads it any more).
  void remove_rendezvous_dir();
  /// Waits up to `timeout_ms` for the children to end on their own, then
  /// kills the rest; returns when none is left. Called at rank 0's exit.
  void stop(uint32_t timeout_ms);

 private:
  std::string dir_;
  std::vector<pid_t> children_;  ///< rank r at r - 1
};

}  // namespace kern::run
