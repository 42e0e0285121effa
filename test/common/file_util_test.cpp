// read_file, read_stdin and write_file_atomic on a scratch directory: exact
// bytes, refusals of FIFOs/devices/oversized files, temporary files removed
// on EFBIG and on every terminating signal, outputs that are written through
// (FIFOs without a reader, descriptors, symlinks) and same_file.
#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/file_util.h"
#include "common/temp_cleanup.h"

namespace kern {
namespace {

namespace fs = std::filesystem;

/// A fresh empty directory under the test's working directory.
fs::path scratch_dir(const std::string& name) {
  fs::path dir = fs::current_path() / ("file_util_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST_CASE("read_file returns the exact bytes, nul bytes included", "[file]") {
  fs::path dir = scratch_dir("read");
  std::string bytes("a\0b\nc", 5);
  REQUIRE(write_file_atomic((dir / "f.bin").string(), bytes).ok());
  auto r = read_file((dir / "f.bin").string());
  REQUIRE(r.ok());
  CHECK(*r == bytes);
  REQUIRE(write_file_atomic((dir / "empty").string(), "").ok());
  CHECK(read_file((dir / "empty").string()).value().empty());
  fs::remove_all(dir);
}

TEST_CASE("read_file errors name the path and the reason", "[file]") {
  auto missing = read_file("no/such/manifest.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::kIo);
  CHECK(missing.error().message == "no/such/manifest.json: cannot open: No such file or directory");
  fs::path dir = scratch_dir("dir");
  auto is_dir = read_file(dir.string());
  REQUIRE_FALSE(is_dir.ok());
  CHECK(is_dir.error().message == dir.string() + ": is a directory, not a file");
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic replaces the file and leaves no temporary behind", "[file]") {
  fs::path dir = scratch_dir("replace");
  std::string path = (dir / "plan.kplan").string();
  REQUIRE(write_file_atomic(path, "old contents").ok());
  REQUIRE(write_file_atomic(path, "new").ok());
  CHECK(read_file(path).value() == "new");
  CHECK(entries(dir) == 1);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic fails cleanly when the target cannot be replaced", "[file]") {
  fs::path dir = scratch_dir("fail");
  // The target is a non-empty directory: rename(2) fails after the temp file
  // was written, and the temp file must be removed.
  fs::create_directories(dir / "plan.kplan" / "inside");
  Status s = write_file_atomic((dir / "plan.kplan").string(), "bytes");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kIo);
  CHECK(s.error().message.rfind((dir / "plan.kplan").string() + ": cannot rename ", 0) == 0);
  CHECK(entries(dir) == 1);  // only the directory that was there
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic into a missing directory is an error naming the path", "[file]") {
  Status s = write_file_atomic("no/such/dir/plan.kplan", "x");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message ==
        "no/such/dir/plan.kplan: cannot create a temporary file in no/such/dir: No such file or directory");
}

TEST_CASE("write_file_atomic writes into an existing FIFO instead of replacing it", "[file]") {
  fs::path dir = scratch_dir("fifo");
  std::string path = (dir / "out.kplan").string();
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  // A non-blocking reader is open first, so the writer's open does not wait.
  int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  Status s = write_file_atomic(path, "plan bytes");
  CHECK(s.ok());
  char buf[64] = {};
  ssize_t n = ::read(reader, buf, sizeof buf);
  ::close(reader);
  CHECK(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0) == "plan bytes");
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(entries(dir) == 1);  // no temporary left beside it
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic writes into character devices, reporting their write errors", "[file]") {
  fs::path dir = scratch_dir("devices");
  // Copies of /dev/null (1,3) and /dev/full (1,7) in a scratch directory, so
  // a regression replaces these copies, never the real devices.
  std::string null_path = (dir / "null").string();
  std::string full_path = (dir / "full").string();
  if (::mknod(null_path.c_str(), S_IFCHR | 0600, makedev(1, 3)) != 0 ||
      ::mknod(full_path.c_str(), S_IFCHR | 0600, makedev(1, 7)) != 0) {
    WARN("mknod needs CAP_MKNOD (" << std::strerror(errno) << "): device copies not tested");
    fs::remove_all(dir);
    return;
  }
  CHECK(write_file_atomic(null_path, "discarded").ok());
  Status full = write_file_atomic(full_path, "bytes");
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().kind == ErrorKind::kIo);
  CHECK(full.error().message == full_path + ": write error: No space left on device");
  struct stat st {};
  REQUIRE(::lstat(null_path.c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  REQUIRE(::lstat(full_path.c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(entries(dir) == 2);
  fs::remove_all(dir);
}

TEST_CASE("write_existing_file reports ENOSPC from /dev/full and never creates a file", "[file]") {
  // write_existing_file opens without O_CREAT: it cannot replace /dev/full.
  Status full = write_existing_file("/dev/full", "bytes");
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().message == "/dev/full: write error: No space left on device");
  CHECK(write_existing_file("/dev/null", "bytes").ok());
  fs::path dir = scratch_dir("existing");
  Status missing = write_existing_file((dir / "absent").string(), "x");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == (dir / "absent").string() + ": cannot open for writing: No such file or directory");
  CHECK(entries(dir) == 0);
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic rejects an empty path", "[file]") {
  Status s = write_file_atomic("", "x");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kUsage);
  CHECK(s.error().message == "output path is empty");
}

TEST_CASE("check_output_path accepts new and existing files and names what blocks a write", "[file]") {
  fs::path dir = scratch_dir("check");
  std::string existing = (dir / "old.bin").string();
  REQUIRE(write_file_atomic(existing, "x").ok());
  CHECK(check_output_path((dir / "new.bin").string()).ok());
  CHECK(check_output_path(existing).ok());
  CHECK(check_output_path("/dev/null").ok());
  Status missing = check_output_path((dir / "no" / "x.bin").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::kIo);
  CHECK(missing.error().message == (dir / "no" / "x.bin").string() + ": cannot write there: " + (dir / "no").string() +
                                       ": No such file or directory");
  Status under_file = check_output_path(existing + "/x.bin");
  REQUIRE_FALSE(under_file.ok());
  CHECK(under_file.error().message == existing + "/x.bin: cannot write there: " + existing + ": Not a directory");
  Status is_dir = check_output_path(dir.string());
  REQUIRE_FALSE(is_dir.ok());
  CHECK(is_dir.error().message == dir.string() + ": is a directory, not a file");
  Status empty = check_output_path("");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().kind == ErrorKind::kUsage);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kern

namespace kern {
namespace {

TEST_CASE("read_file refuses FIFOs and devices before reading, without blocking", "[file]") {
  fs::path dir = scratch_dir("fifo");
  const std::string fifo = (dir / "m.json").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto r = read_file(fifo);  // no writer: a blocking open would wait forever
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kIo);
  CHECK(r.error().message == fifo + ": is a FIFO, not a regular file");
  auto zero = read_file("/dev/zero");  // used to grow without bound
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().message == "/dev/zero: is a character device, not a regular file");
  fs::remove_all(dir);
}

TEST_CASE("read_file refuses a file over its cap from fstat, before reading it", "[file]") {
  fs::path dir = scratch_dir("cap");
  const std::string path = (dir / "big.kplan").string();
  REQUIRE(write_file_atomic(path, "0123456789").ok());
  auto small = read_file(path, 4);
  REQUIRE_FALSE(small.ok());
  CHECK(small.error().message == path + ": is 10 B; the limit is 4 B");
  CHECK(read_file(path, 10).ok());
  // A sparse 3 GiB file costs no disk; the default cap refuses it at once.
  const int fd = ::open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, off_t{3} << 30) == 0);
  ::close(fd);
  auto huge = read_file(path);
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message == path + ": is 3221225472 B; the limit is 268435456 B");
  fs::remove_all(dir);
}

TEST_CASE("read_stdin of a closed stdin is a usage error, not empty input", "[file]") {
  const int saved = ::dup(STDIN_FILENO);
  REQUIRE(saved >= 0);
  ::close(STDIN_FILENO);
  auto r = read_stdin();
  REQUIRE(::dup2(saved, STDIN_FILENO) == STDIN_FILENO);
  ::close(saved);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kUsage);
  CHECK(r.error().message == "stdin is closed: give the input as an option or a file instead");
}

/// Runs write_file_atomic of `bytes` into dir/out.kplan in a child process
/// after `setup` and returns its wait status.
int child_write(const fs::path& dir, size_t bytes, const std::function<void()>& setup) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setup();
    const std::string payload(bytes, 'x');
    const Status s = write_file_atomic((dir / "out.kplan").string(), payload);
    ::_exit(s.ok() ? 0 : (s.error().message.find("File too large") != std::string::npos ? 3 : 4));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST_CASE("write_file_atomic past ulimit -f fails with EFBIG and leaves no temporary file", "[file]") {
  fs::path dir = scratch_dir("xfsz");
  const int status = child_write(dir, 1 << 20, [] {
    struct rlimit lim {8192, 8192};
    ::setrlimit(RLIMIT_FSIZE, &lim);
  });
  REQUIRE(WIFEXITED(status));  // not killed by SIGXFSZ
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(entries(dir) == 0);
  fs::remove_all(dir);
}

/// In a child, before it writes: the first write(2) to a file in `dir` sends
/// `sig` to this process from inside that write. An inotify watch for
/// IN_MODIFY on `dir` whose descriptor signals its owner (O_ASYNC, with
/// F_SETSIG choosing the signal) raises it as the write completes, so it
/// arrives while write_file_atomic is writing its temporary file, however
/// small the file and however fast or loaded the machine. (The signal used
/// to come from the parent once the temporary appeared, racing a 256 MiB
/// write: 25 s for the test alone, over its timeout beside busy cores.)
void signal_on_first_write(const fs::path& dir, int sig) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0 || ::inotify_add_watch(fd, dir.c_str(), IN_MODIFY) < 0 || ::fcntl(fd, F_SETOWN, ::getpid()) != 0 ||
      ::fcntl(fd, F_SETSIG, sig) != 0 || ::fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0)
    ::_exit(5);  // no inotify here: the status names it
}

TEST_CASE("every terminating signal during write_file_atomic removes the temporary file and still kills", "[file]") {
  // SIGALRM (timeout(1) --signal, alarm), SIGUSR1/2, SIGXCPU (ulimit -t),
  // SIGPIPE and SIGQUIT used to leave out.kplan.tmp.* behind.
  for (int sig : kTerminatingSignals) {
    INFO("signal " << sig << " (" << strsignal(sig) << ")");
    fs::path dir = scratch_dir("signal");
    // The child starts as a tool does, with `sig` at its default (Catch2's
    // fatal-signal handlers would otherwise stay in charge of it).
    const int status = child_write(dir, 4096, [&] {
      ::signal(sig, SIG_DFL);
      signal_on_first_write(dir, sig);
    });
    INFO("wait status " << status);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK(entries(dir) == 0);
    fs::remove_all(dir);
  }
}

TEST_CASE("a signal the process ignores (nohup's SIGHUP) stays ignored while write_file_atomic writes", "[file]") {
  fs::path dir = scratch_dir("nohup");
  const int status = child_write(dir, size_t{1} << 20, [&] {
    ::signal(SIGHUP, SIG_IGN);
    signal_on_first_write(dir, SIGHUP);
  });
  REQUIRE(WIFEXITED(status));  // the write went on
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(fs::file_size(dir / "out.kplan") == size_t{1} << 20);
  CHECK(entries(dir) == 1);
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic into a FIFO with no reader fails at once instead of waiting", "[file]") {
  fs::path dir = scratch_dir("fifo_no_reader");
  const std::string path = (dir / "out.fifo").string();
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  // In a child bounded by alarm(2): the old open(2) waited forever.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(30);
    const Status s = write_file_atomic(path, "plan");
    const bool want = !s.ok() && s.error().kind == ErrorKind::kIo &&
                      s.error().message == path + ": is a FIFO with no reader; nothing written (start the reader first)";
    ::_exit(want ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));  // not killed by the alarm
  CHECK(WEXITSTATUS(status) == 0);
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(entries(dir) == 1);
  fs::remove_all(dir);
}

TEST_CASE("an output naming one of the process's descriptors is written to it, never renamed over", "[file]") {
  // What /dev/stdout is: a link into /proc/self/fd. Here a link of our own,
  // to a descriptor open on a regular file (stdout redirected to a file),
  // so a regression replaces this link and not the system's /dev/stdout.
  fs::path dir = scratch_dir("fd_link");
  const std::string real = (dir / "stdout.txt").string(), link = (dir / "stdout").string();
  const int fd = ::open(real.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "text;", 5) == 5);  // what the tool printed before
  REQUIRE(::symlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), link.c_str()) == 0);
  CHECK(check_output_path(link).ok());
  CHECK_FALSE(output_is_replaced(link));
  Status s = write_file_atomic(link, "plan");
  INFO((s.ok() ? "" : s.error().message));
  CHECK(s.ok());
  CHECK(write_file_atomic("/dev/fd/" + std::to_string(fd), "+more").ok());
  ::close(fd);
  struct stat st {};
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  auto text = read_file(real);
  REQUIRE(text.ok());
  CHECK(*text == "text;plan+more");  // at the descriptor's position, nothing overwritten
  CHECK(entries(dir) == 2);
  Status closed = write_file_atomic("/dev/fd/" + std::to_string(fd), "x");
  REQUIRE_FALSE(closed.ok());
  CHECK(closed.error().message == "/dev/fd/" + std::to_string(fd) + ": cannot write to file descriptor " +
                                      std::to_string(fd) + ": Bad file descriptor");
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic through a symlink to a regular file replaces the target and keeps the link", "[file]") {
  fs::path dir = scratch_dir("symlink");
  fs::create_directories(dir / "plans");
  REQUIRE(write_file_atomic((dir / "plans" / "real.kplan").string(), "old").ok());
  fs::create_symlink("plans/real.kplan", dir / "out.kplan");
  REQUIRE(write_file_atomic((dir / "out.kplan").string(), "new").ok());
  CHECK(fs::is_symlink(dir / "out.kplan"));
  auto text = read_file((dir / "plans" / "real.kplan").string());
  REQUIRE(text.ok());
  CHECK(*text == "new");
  CHECK(entries(dir / "plans") == 1);
  fs::remove_all(dir);
}

TEST_CASE("same_file sees one file under any spelling, existing or not", "[file]") {
  fs::path dir = scratch_dir("same");
  const std::string a = (dir / "a.json").string();
  REQUIRE(write_file_atomic(a, "{}").ok());
  fs::create_symlink("a.json", dir / "link.json");
  fs::create_hard_link(dir / "a.json", dir / "hard.json");
  CHECK(same_file(a, (dir / "." / "a.json").string()));
  CHECK(same_file(a, (dir / "link.json").string()));
  CHECK(same_file(a, (dir / "hard.json").string()));
  CHECK_FALSE(same_file(a, (dir / "b.json").string()));
  // Not there yet: the same directory and name.
  CHECK(same_file((dir / "new.bin").string(), (dir / "." / "new.bin").string()));
  CHECK_FALSE(same_file((dir / "new.bin").string(), (dir / "other.bin").string()));
  CHECK_FALSE(same_file((dir / "no" / "x").string(), (dir / "no" / "x").string()));  // cannot be examined
  CHECK(output_is_replaced(a));
  CHECK(output_is_replaced((dir / "new.bin").string()));
  CHECK_FALSE(output_is_replaced("/dev/null"));
  CHECK_FALSE(output_is_replaced("/dev/stdout"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kern
