// Starting and watching the ranks of `kern-run --tp N` (tp_ranks.h).
#include "kern-run/tp_ranks.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

namespace kern::run {

namespace {

int g_argc = 0;
char** g_argv = nullptr;

// The children, for the signal handler (async-signal-safe reads only).
constexpr size_t kMaxChildren = 64;
pid_t g_children[kMaxChildren] = {};
std::atomic<size_t> g_num_children{0};
std::atomic<bool> g_stopping{false};  // rank 0 is ending them itself: not a failure

void kill_children(int sig) {
  const size_t n = g_num_children.load();
  for (size_t i = 0; i < n; ++i)
    if (g_children[i] > 0) kill(g_children[i], sig);
}

/// SIGINT / SIGTERM on rank 0: end the children, then die of the signal.
void on_terminate(int sig) {
  g_stopping.store(true);
  kill_children(SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

/// "exited with status 3" / "was killed by signal 9 (Killed)".
std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

/// Polls the children; the first that fails ends the run (see tp_ranks.h).
void watch(std::vector<pid_t> children, std::string dir) {
  std::vector<bool> done(children.size(), false);
  size_t left = children.size();
  while (left > 0) {
    for (size_t i = 0; i < children.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      const pid_t r = waitpid(children[i], &status, WNOHANG);
      if (r == 0) continue;
      done[i] = true;
      --left;
      const bool failed = r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (!failed || g_stopping.load()) continue;
      const std::string msg = "kern-run: error: rank " + std::to_string(i + 1) + " " + describe_status(status) +
                              "; stopping every rank\n";
      (void)!write(STDERR_FILENO, msg.data(), msg.size());
      g_stopping.store(true);
      kill_children(SIGKILL);
      for (size_t j = 0; j < children.size(); ++j)
        if (!done[j]) waitpid(children[j], nullptr, 0);
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      std::fflush(stdout);
      _exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

void set_process_args(int argc, char** argv) {
  g_argc = argc;
  g_argv = argv;
}

Result<RankGroup*> RankGroup::start(uint32_t world) {
  static std::unique_ptr<RankGroup> group;  // one per process; lives until exit
  if (group) return make_error(ErrorKind::kUsage, "the ranks were started already");
  if (g_argv == nullptr) return make_error(ErrorKind::kUsage, "--tp: the process arguments were not recorded");
  if (world - 1 > kMaxChildren) return make_error(ErrorKind::kUsage, "--tp " + std::to_string(world) + " is too many ranks");
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return make_error(ErrorKind::kIo, "--tp: cannot find this binary (/proc/self/exe): " + ec.message());
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/kern-tp.XXXXXX";
  if (mkdtemp(templ.data()) == nullptr)
    return make_error(ErrorKind::kIo, "--tp: cannot make a rendezvous directory " + templ + ": " + std::strerror(errno));
  auto g = std::make_unique<RankGroup>();
  g->dir_ = templ;
  struct sigaction sa = {};
  sa.sa_handler = on_terminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  const pid_t parent = getpid();
  for (uint32_t r = 1; r < world; ++r) {
    std::vector<std::string> args(g_argv, g_argv + g_argc);
    args.insert(args.end(), {"--tp-rank", std::to_string(r), "--tp-rendezvous", g->dir_});
    std::vector<char*> cargs;
    for (std::string& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      const int err = errno;
      g_stopping.store(true);
      kill_children(SIGKILL);
      for (pid_t c : g->children_) waitpid(c, nullptr, 0);
      std::filesystem::remove_all(g->dir_, ec);
      return make_error(ErrorKind::kIo, "--tp: fork for rank " + std::to_string(r) + ": " + std::strerror(err));
    }
    if (pid == 0) {
      // The child: die with rank 0 (even by SIGKILL); stdout and stdin are
      // rank 0's alone (every rank computes the same tokens).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      const int null_fd = open("/dev/null", O_RDWR);
      if (null_fd >= 0) {
        dup2(null_fd, STDIN_FILENO);
        dup2(null_fd, STDOUT_FILENO);
      }
      execv(exe.c_str(), cargs.data());
      _exit(127);
    }
    g->children_.push_back(pid);
    g_children[g_num_children.load()] = pid;
    g_num_children.fetch_add(1);
  }
  std::thread(watch, g->children_, g->dir_).detach();
  group = std::move(g);
  std::atexit([] {
    if (group) group->stop(1000);
  });
  return group.get();
}

void RankGroup::remove_rendezvous_dir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void RankGroup::stop(uint32_t timeout_ms) {
  g_stopping.store(true);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // The watcher thread reaps children as they end; here only wait and kill.
  auto alive = [&] {
    size_t n = 0;
    for (pid_t c : children_)
      if (kill(c, 0) == 0) {
        int st = 0;
        if (waitpid(c, &st, WNOHANG) == 0) ++n;
      }
    return n;
  };
  while (alive() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill_children(SIGKILL);
  for (pid_t c : children_) waitpid(c, nullptr, 0);
  remove_rendezvous_dir();
}

}  // namespace kern::run
