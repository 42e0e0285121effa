// The temporary-file guard of write_file_atomic (temp_cleanup.h).
#include "common/temp_cleanup.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace kern {
namespace {

// The temporary file being written, for the handlers (async-signal-safe: a
// fixed buffer and a flag, read with no lock).
char g_pending_path[4096];
volatile sig_atomic_t g_pending = 0;

// The dispositions the live guard replaced, and which of them it replaced.
std::array<struct sigaction, kTerminatingSignals.size()> g_old{};
std::array<bool, kTerminatingSignals.size()> g_installed{};
struct sigaction g_old_xfsz {};

void remove_pending_and_reraise(int sig) {
  remove_pending_temp_file();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // die of the signal as if the handler had not been there
}

}  // namespace

void remove_pending_temp_file() noexcept {
  if (g_pending) {
    const int saved = errno;
    ::unlink(g_pending_path);
    errno = saved;
  }
  g_pending = 0;
}

TempFileGuard::TempFileGuard() {
  struct sigaction sa {};
  sa.sa_handler = remove_pending_and_reraise;
  ::sigemptyset(&sa.sa_mask);
  for (int sig : kTerminatingSignals) ::sigaddset(&sa.sa_mask, sig);  // one handler at a time
  for (size_t i = 0; i < kTerminatingSignals.size(); ++i) {
    g_installed[i] = false;
    if (::sigaction(kTerminatingSignals[i], nullptr, &g_old[i]) != 0) continue;
    // An ignored signal stays ignored (nohup's SIGHUP must not now kill),
    // and a handler the program installed stays in charge.
    if ((g_old[i].sa_flags & SA_SIGINFO) != 0 || g_old[i].sa_handler != SIG_DFL) continue;
    g_installed[i] = ::sigaction(kTerminatingSignals[i], &sa, nullptr) == 0;
  }
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigemptyset(&ign.sa_mask);
  ::sigaction(SIGXFSZ, &ign, &g_old_xfsz);
}

TempFileGuard::~TempFileGuard() {
  g_pending = 0;
  for (size_t i = 0; i < kTerminatingSignals.size(); ++i)
    if (g_installed[i]) ::sigaction(kTerminatingSignals[i], &g_old[i], nullptr);
  ::sigaction(SIGXFSZ, &g_old_xfsz, nullptr);
}

int TempFileGuard::create(std::string& name_template) {
  sigset_t block, old;
  ::sigemptyset(&block);
  for (int sig : kTerminatingSignals) ::sigaddset(&block, sig);
  ::sigprocmask(SIG_BLOCK, &block, &old);
  const int fd = ::mkstemp(name_template.data());
  const int err = errno;
  if (fd >= 0 && name_template.size() < sizeof g_pending_path) {
    std::memcpy(g_pending_path, name_template.c_str(), name_template.size() + 1);
    g_pending = 1;
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return fd;
}

void TempFileGuard::release() { g_pending = 0; }

}  // namespace kern
