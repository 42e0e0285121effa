// Removing the temporary file of an output being written when a signal ends
// the process (write_file_atomic's guard, and the SIGBUS handler of a mapped
// file truncated under kern-load): no signal leaves a `*.tmp.*` behind.
#pragma once

#include <array>
#include <csignal>
#include <string>

namespace kern {

/// The signals that end a process by default and can arrive from outside
/// while an output is written (kill, the terminal, timers, resource limits,
/// a closed pipe): SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1,
/// SIGUSR2, SIGXCPU, SIGPIPE, SIGVTALRM, SIGPROF, SIGPOLL, SIGPWR
/// (signal(7), "Standard signals"). SIGXFSZ is handled apart (ignored, so a
/// write past `ulimit -f` fails with EFBIG).
inline constexpr std::array<int, 13> kTerminatingSignals = {SIGINT,  SIGTERM,   SIGHUP,  SIGQUIT, SIGALRM,
                                                            SIGUSR1, SIGUSR2,   SIGXCPU, SIGPIPE, SIGVTALRM,
                                                            SIGPROF, SIGPOLL,   SIGPWR};

/// While alive, each of kTerminatingSignals whose disposition is SIG_DFL
/// (one the process ignores, as under nohup, or handles itself, stays as it
/// is) removes the temporary file registered by create() and then ends the
/// process by the same signal, as if the guard had not been there; SIGXFSZ
/// is ignored. The previous dispositions are restored on destruction. One
/// guard at a time (kern's tools write one output at a time, from one thread).
class TempFileGuard {
 public:
  TempFileGuard();
  ~TempFileGuard();
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

  /// mkstemp(`name_template`) with the signals blocked until the new name is
  /// registered, so no signal can leave an unregistered file. Returns the fd
  /// (or -1 with errno set, as mkstemp).
  int create(std::string& name_template);

  /// The temporary file is gone (removed, or renamed to the output): a later
  /// signal removes nothing.
  void release();
};

/// Removes the temporary file registered by the live TempFileGuard, if any.
/// Async-signal-safe (unlink of a fixed buffer): for other handlers of fatal
/// signals, such as the SIGBUS of a truncated mapping (kern-load/mapping_guard.h).
void remove_pending_temp_file() noexcept;

}  // namespace kern
