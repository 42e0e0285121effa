// read_file / write_file_atomic / write_existing_file over POSIX calls
// (open, read, stat, mkstemp, write, fsync, rename).
#include "common/file_util.h"

#include <cerrno>
#include <cstring>
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

Result<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return io_error(path, "cannot stat", err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorKind::kIo, path + ": is a directory, not a file");
  }
  std::string out;
  if (st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  std::vector<char> buf(1 << 16);
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return io_error(path, "read error", err);
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
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

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  if (path.empty()) return make_error(ErrorKind::kUsage, "output path is empty");
  // An existing device, FIFO or socket is written in place: rename(2) over
  // it would replace, say, /dev/null with a regular file (as root).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    return write_existing_file(path, bytes);
  }
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());
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
