// read_file / read_stdin over POSIX calls (open, fstat, read); the writing
// half of file_util.h is file_write.cpp.
#include "common/file_util.h"

#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kern {

Error io_error(const std::string& path, const std::string& what, int err) {
  return make_error(ErrorKind::kIo, path + ": " + what + ": " + std::strerror(err));
}

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

}  // namespace kern
