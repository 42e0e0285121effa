// The SIGBUS handler of mapped files that shrink under the process (mapping_guard.h).
#include "kern-load/mapping_guard.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

#include <unistd.h>

#include "common/temp_cleanup.h"

namespace kern::load {
namespace {

/// One guarded mapping. `begin` is published last (release) and cleared
/// first, so the handler never reads a half-written slot as live.
struct Slot {
  std::atomic<uintptr_t> begin{0};  ///< 0: free
  std::atomic<size_t> size{0};
  char path[1024] = {};
};

Slot g_slots[kMaxGuardedMappings];
std::mutex g_mutex;  // registration only; the handler takes no lock
struct sigaction g_previous {};
bool g_installed = false;

static_assert(std::atomic<uintptr_t>::is_always_lock_free && std::atomic<size_t>::is_always_lock_free,
              "the SIGBUS handler reads the slots without a lock");

/// write(2) of the whole of `s`; the handler's only output.
void say(const char* s, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}
void say(const char* s) { say(s, std::strlen(s)); }

/// Decimal text of `v` without allocation.
void say_number(uint64_t v) {
  char buf[24];
  size_t i = sizeof buf;
  do {
    buf[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  say(buf + i, sizeof buf - i);
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
  // si_code > 0: raised by the kernel for a fault at si_addr (a kill(2) has
  // SI_USER and no address).
  if (info != nullptr && info->si_code > 0) {
    const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (Slot& s : g_slots) {
      const uintptr_t begin = s.begin.load(std::memory_order_acquire);
      if (begin == 0 || addr < begin || addr - begin >= s.size.load(std::memory_order_relaxed)) continue;
      // Several threads can fault on the truncated file at once (the cpu
      // device's workers): the first one reports and exits, the others wait
      // for that _exit, so the one line is never interleaved.
      static std::atomic<bool> reporting{false};
      if (reporting.exchange(true, std::memory_order_acq_rel)) {
        for (;;) ::pause();
      }
      remove_pending_temp_file();
      say(program_invocation_short_name);
      say(": error: ");
      say(s.path);
      say(": the file was truncated while in use (offset ");
      say_number(addr - begin);
      say(" B is past its end now); stopped (replace a file in use with mv, never cp over it)\n");
      ::_exit(2);
    }
  }
  // Not a guarded mapping: whatever handled SIGBUS before us decides.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if ((g_previous.sa_flags & SA_SIGINFO) == 0 && g_previous.sa_handler != SIG_DFL &&
      g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  if (info == nullptr || info->si_code <= 0) ::raise(sig);  // a fault instead repeats on return, now fatal
}

}  // namespace

int guard_mapping(const void* base, size_t size_bytes, const std::string& path) {
  if (base == nullptr || size_bytes == 0) return -1;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_installed) {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    ::sigemptyset(&sa.sa_mask);
    g_installed = ::sigaction(SIGBUS, &sa, &g_previous) == 0;
    if (!g_installed) return -1;
  }
  for (int i = 0; i < kMaxGuardedMappings; ++i) {
    Slot& s = g_slots[i];
    if (s.begin.load(std::memory_order_relaxed) != 0) continue;
    const size_t n = std::min(path.size(), sizeof s.path - 1);
    std::memcpy(s.path, path.data(), n);
    s.path[n] = '\0';
    s.size.store(size_bytes, std::memory_order_relaxed);
    s.begin.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
    return i;
  }
  return -1;
}

void unguard_mapping(int slot) {
  if (slot < 0 || slot >= kMaxGuardedMappings) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_slots[slot].begin.store(0, std::memory_order_release);
}

}  // namespace kern::load
