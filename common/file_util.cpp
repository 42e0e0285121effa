// read_file / write_file_atomic / write_existing_file over POSIX calls
// (open, read, stat, mkstemp, write, fsync, rename).
#include "common/file_util.h"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <functional>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kern {
namespace {

Error io_error(const std::string& path, const std::string& what, int err) {
  return make_error(ErrorKind::kIo, path + ": " + what + ": " + std::strerror(err));
}

/// Directory part of `path` ("." when it has none).
std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

const char* file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

namespace {

/// Reads `fd` to its end into `out`, failing once more than `max_bytes`
/// arrived (`too_large` builds that error). EINTR is retried.
Status read_all(int fd, uint64_t max_bytes, std::string& out, const std::string& name,
                const std::function<Error()>& too_large) {
  std::vector<char> buf(1 << 16);
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(name, "read error", errno);
    }
    if (n == 0) return Status::ok_status();
    if (static_cast<uint64_t>(n) > max_bytes - out.size()) return too_large();
    out.append(buf.data(), static_cast<size_t>(n));
  }
}

}  // namespace

Result<std::string> read_file(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; the
  // fstat below refuses it (and every other non-regular file) before any read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return io_error(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return io_error(path, "cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    if (S_ISDIR(st.st_mode)) return make_error(ErrorKind::kIo, path + ": is a directory, not a file");
    return make_error(ErrorKind::kIo, path + ": is " + file_kind(st.st_mode) + ", not a regular file");
  }
  auto too_large = [&] {
    return make_error(ErrorKind::kIo, path + ": is larger than the limit of " + std::to_string(max_bytes) + " B");
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return make_error(ErrorKind::kIo, path + ": is " + std::to_string(st.st_size) + " B; the limit is " +
                                          std::to_string(max_bytes) + " B");
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  Status s = read_all(fd, max_bytes, out, path, too_large);  // the file may grow while read
  ::close(fd);
  KERN_RETURN_IF_ERROR(s);
  return out;
}

Result<std::string> read_stdin(uint64_t max_bytes) {
  if (::fcntl(STDIN_FILENO, F_GETFD) < 0)
    return make_error(ErrorKind::kUsage, "stdin is closed: give the input as an option or a file instead");
  std::string out;
  KERN_RETURN_IF_ERROR(read_all(STDIN_FILENO, max_bytes, out, "stdin", [&] {
    return make_error(ErrorKind::kUsage, "stdin: more than the limit of " + std::to_string(max_bytes) + " B");
  }));
  return out;
}

Status check_output_path(const std::string& path) {
  if (path.empty()) return make_error(ErrorKind::kUsage, "output path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return make_error(ErrorKind::kIo, path + ": is a directory, not a file");
    if (::access(path.c_str(), W_OK) != 0) return io_error(path, "cannot write it", errno);
    // A regular file is replaced by rename: its directory must be writable too.
    if (!S_ISREG(st.st_mode)) return Status::ok_status();
  }
  std::string dir = directory_of(path);
  struct stat dir_st {};
  if (::stat(dir.c_str(), &dir_st) != 0) return io_error(path, "cannot write there: " + dir, errno);
  if (!S_ISDIR(dir_st.st_mode)) return io_error(path, "cannot write there: " + dir, ENOTDIR);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return io_error(path, "cannot write there: " + dir, errno);
  return Status::ok_status();
}

Status write_existing_file(const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return io_error(path, "cannot open for writing", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return io_error(path, "write error", err);
    }
    if (n == 0) {  // a device that takes nothing more
      ::close(fd);
      return io_error(path, "write error", ENOSPC);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return io_error(path, "close failed", errno);
  return Status::ok_status();
}

namespace {

// The temporary file of the write_file_atomic in progress, for the signal
// handler (async-signal-safe: a fixed buffer, a flag, unlink, sigaction,
// raise). kern's tools write one output at a time, from one thread.
char g_pending_path[4096];
volatile sig_atomic_t g_pending = 0;

void remove_pending_and_reraise(int sig) {
  if (g_pending) ::unlink(g_pending_path);
  g_pending = 0;
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // die of the signal as if the handler had not been there
}

/// While alive: SIGINT, SIGTERM, SIGHUP remove the temporary file created
/// by create() and then kill the process as before; SIGXFSZ is ignored, so
/// a write past `ulimit -f` fails with EFBIG and the normal error path
/// removes the file. The previous dispositions are restored on destruction.
class PendingTemp {
 public:
  PendingTemp() {
    struct sigaction sa {};
    sa.sa_handler = remove_pending_and_reraise;
    ::sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kFatal.size(); ++i) ::sigaction(kFatal[i], &sa, &old_[i]);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    ::sigemptyset(&ign.sa_mask);
    ::sigaction(SIGXFSZ, &ign, &old_xfsz_);
  }
  ~PendingTemp() {
    g_pending = 0;
    for (size_t i = 0; i < kFatal.size(); ++i) ::sigaction(kFatal[i], &old_[i], nullptr);
    ::sigaction(SIGXFSZ, &old_xfsz_, nullptr);
  }
  PendingTemp(const PendingTemp&) = delete;
  PendingTemp& operator=(const PendingTemp&) = delete;

  /// mkstemp(template) and registers the name (when it fits the buffer).
  int create(std::string& name_template) {
    // Signals are blocked between mkstemp and the registration, so no
    // signal can leave a file that is not yet registered.
    sigset_t block, old;
    ::sigemptyset(&block);
    for (int sig : kFatal) ::sigaddset(&block, sig);
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

 private:
  static constexpr std::array<int, 3> kFatal = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
  struct sigaction old_xfsz_ {};
};

}  // namespace

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  if (path.empty()) return make_error(ErrorKind::kUsage, "output path is empty");
  // An existing device, FIFO or socket is written in place: rename(2) over
  // it would replace, say, /dev/null with a regular file (as root).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    return write_existing_file(path, bytes);
  }
  std::string tmp = path + ".tmp.XXXXXX";
  PendingTemp guard;  // a signal while the temporary exists removes it
  int fd = guard.create(tmp);
  if (fd < 0) return io_error(path, "cannot create a temporary file in " + directory_of(path), errno);
  auto fail = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status(io_error(path, what, err));
  };
  if (::fchmod(fd, 0644) != 0) return fail("cannot set the mode of " + tmp, errno);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write error on " + tmp, errno);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync of " + tmp + " failed", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return io_error(path, "close of " + tmp + " failed", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return io_error(path, "cannot rename " + tmp + " over it", err);
  }
  g_pending = 0;  // the temporary is the output now
  // Make the rename itself durable.
  int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    int rc = ::fsync(dir);
    int err = errno;
    ::close(dir);
    if (rc != 0 && err != EINVAL) return io_error(path, "fsync of its directory failed", err);
  }
  return Status::ok_status();
}

}  // namespace kern
