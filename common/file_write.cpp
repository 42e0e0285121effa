// Writing outputs (file_util.h): a regular file is replaced atomically
// (mkstemp, write, fsync, rename); anything else is written through, never
// renamed over: a device, a FIFO (opened without blocking), or a name for one
// of this process's file descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N).
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_util.h"
#include "common/temp_cleanup.h"

namespace kern {
namespace {

/// Directory part of `path` ("." when it has none).
std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// The file descriptor `name` stands for in this process, or -1:
/// /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N,
/// /proc/thread-self/fd/N, /proc/<our pid>/fd/N.
int fd_named_by(const std::string& name) {
  if (name == "/dev/stdin") return 0;
  if (name == "/dev/stdout") return 1;
  if (name == "/dev/stderr") return 2;
  std::string_view rest;
  const std::string own = "/proc/" + std::to_string(::getpid()) + "/fd/";
  for (const std::string& prefix : {std::string("/dev/fd/"), std::string("/proc/self/fd/"),
                                    std::string("/proc/thread-self/fd/"), own}) {
    if (name.rfind(prefix, 0) == 0) {
      rest = std::string_view(name).substr(prefix.size());
      break;
    }
  }
  if (rest.empty()) return -1;
  int fd = -1;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), fd);
  return ec == std::errc() && p == rest.data() + rest.size() && fd >= 0 ? fd : -1;
}

/// How an output is written (resolve_output).
struct OutputTarget {
  enum class Kind {
    kReplace,       ///< a regular file (or a new one): replaced by rename at `path`
    kThroughPath,   ///< a device, FIFO, socket or /proc file: opened and written at `path`
    kThroughFd,     ///< one of this process's descriptors: written to `fd`
  } kind = Kind::kReplace;
  std::string path;  ///< the file to replace or open: symlinks of the output followed
  int fd = -1;
};

/// Follows the output's symlinks (at most 40, like the kernel) to the file
/// they end at, so replacing a regular file keeps the links pointing at it,
/// and so a link into /proc/self/fd (as /dev/stdout is) is seen for what it
/// names before the kernel's own resolution hides it.
OutputTarget resolve_output(const std::string& path) {
  OutputTarget t;
  std::string p = path;
  for (int hop = 0; hop < 40; ++hop) {
    if (int fd = fd_named_by(p); fd >= 0) return {OutputTarget::Kind::kThroughFd, p, fd};
    struct stat lst {};
    if (::lstat(p.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) break;
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
    if (n <= 0) break;
    std::string target(buf, static_cast<size_t>(n));
    p = target[0] == '/' ? target : directory_of(p) + "/" + target;
  }
  t.path = p;
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    t.kind = OutputTarget::Kind::kThroughPath;
    return t;
  }
  // Nothing under /proc is replaced by rename (another process's descriptor, a
  // sysctl): it is written like a device.
  if (char* dir = ::realpath(directory_of(p).c_str(), nullptr)) {
    const std::string d = dir;
    std::free(dir);
    if (d == "/proc" || d.rfind("/proc/", 0) == 0) t.kind = OutputTarget::Kind::kThroughPath;
  }
  return t;
}

/// Writes all of `bytes` to `fd`; EINTR is retried, a write of 0 is ENOSPC.
int write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return ENOSPC;  // a device that takes nothing more
    done += static_cast<size_t>(n);
  }
  return 0;
}

/// Whether `fd` is open for writing (0), else the errno to report.
int fd_writable(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return errno;
  return (flags & O_ACCMODE) == O_RDONLY ? EBADF : 0;
}

Status write_fd(const std::string& path, int fd, std::string_view bytes) {
  if (int err = fd_writable(fd); err != 0)
    return io_error(path, "cannot write to file descriptor " + std::to_string(fd), err);
  // What stdio buffered for the same descriptor goes first.
  if (fd == STDOUT_FILENO) std::fflush(stdout);
  if (fd == STDERR_FILENO) std::fflush(stderr);
  if (int err = write_all(fd, bytes); err != 0) return io_error(path, "write error", err);
  return Status::ok_status();
}

Status write_replacing(const std::string& path, const std::string& target, std::string_view bytes) {
  std::string tmp = target + ".tmp.XXXXXX";
  TempFileGuard guard;  // a signal while the temporary exists removes it
  int fd = guard.create(tmp);
  if (fd < 0) return io_error(path, "cannot create a temporary file in " + directory_of(target), errno);
  auto fail = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    guard.release();
    return Status(io_error(path, what, err));
  };
  if (::fchmod(fd, 0644) != 0) return fail("cannot set the mode of " + tmp, errno);
  if (int err = write_all(fd, bytes); err != 0) return fail("write error on " + tmp, err);
  if (::fsync(fd) != 0) return fail("fsync of " + tmp + " failed", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    guard.release();
    return io_error(path, "close of " + tmp + " failed", err);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    guard.release();
    return io_error(path, "cannot rename " + tmp + " over it", err);
  }
  guard.release();  // the temporary is the output now
  // Make the rename itself durable.
  int dir = ::open(directory_of(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    int rc = ::fsync(dir);
    int err = errno;
    ::close(dir);
    if (rc != 0 && err != EINVAL) return io_error(path, "fsync of its directory failed", err);
  }
  return Status::ok_status();
}

/// Identity of a file for same_file: device and inode when it exists, else
/// its directory's device and inode and its last name.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;
  bool operator==(const FileId&) const = default;
};

bool file_id(const std::string& path, FileId& id) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id = {st.st_dev, st.st_ino, ""};
    return true;
  }
  if (errno != ENOENT) return false;
  const OutputTarget t = resolve_output(path);  // a dangling link: where it points
  if (::stat(directory_of(t.path).c_str(), &st) != 0) return false;
  id = {st.st_dev, st.st_ino, base_of(t.path)};
  return true;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  FileId ia, ib;
  return file_id(a, ia) && file_id(b, ib) && ia == ib;
}

bool output_is_replaced(const std::string& path) { return resolve_output(path).kind == OutputTarget::Kind::kReplace; }

Status check_output_path(const std::string& path) {
  if (path.empty()) return make_error(ErrorKind::kUsage, "output path is empty");
  const OutputTarget t = resolve_output(path);
  if (t.kind == OutputTarget::Kind::kThroughFd) {
    if (int err = fd_writable(t.fd); err != 0)
      return io_error(path, "cannot write to file descriptor " + std::to_string(t.fd), err);
    return Status::ok_status();
  }
  struct stat st {};
  if (::stat(t.path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return make_error(ErrorKind::kIo, path + ": is a directory, not a file");
    if (::access(t.path.c_str(), W_OK) != 0) return io_error(path, "cannot write it", errno);
    // A regular file is replaced by rename: its directory must be writable too.
    if (t.kind == OutputTarget::Kind::kThroughPath) return Status::ok_status();
  }
  std::string dir = directory_of(t.path);
  struct stat dir_st {};
  if (::stat(dir.c_str(), &dir_st) != 0) return io_error(path, "cannot write there: " + dir, errno);
  if (!S_ISDIR(dir_st.st_mode)) return io_error(path, "cannot write there: " + dir, ENOTDIR);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return io_error(path, "cannot write there: " + dir, errno);
  return Status::ok_status();
}

Status write_existing_file(const std::string& path, std::string_view bytes) {
  // O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of
  // waiting forever; blocking writes are restored once it is open.
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENXIO) {
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))
        return make_error(ErrorKind::kIo, path + ": is a FIFO with no reader; nothing written (start the reader "
                                                 "first)");
    }
    return io_error(path, "cannot open for writing", errno);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (int err = write_all(fd, bytes); err != 0) {
    ::close(fd);
    return io_error(path, "write error", err);
  }
  if (::close(fd) != 0) return io_error(path, "close failed", errno);
  return Status::ok_status();
}

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  if (path.empty()) return make_error(ErrorKind::kUsage, "output path is empty");
  const OutputTarget t = resolve_output(path);
  switch (t.kind) {
    case OutputTarget::Kind::kThroughFd:
      return write_fd(path, t.fd, bytes);
    case OutputTarget::Kind::kThroughPath:
      return write_existing_file(path, bytes);
    case OutputTarget::Kind::kReplace:
      break;
  }
  return write_replacing(path, t.path, bytes);
}

}  // namespace kern
