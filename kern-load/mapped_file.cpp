// A read-only memory mapping of a whole file (mapped_file.h).
#include "kern-load/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/file_util.h"
#include "kern-load/mapping_guard.h"

namespace kern::load {

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      guard_slot_(std::exchange(other.guard_slot_, -1)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    guard_slot_ = std::exchange(other.guard_slot_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() {
  unguard_mapping(std::exchange(guard_slot_, -1));
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  auto io_error = [&](const char* what) {
    return make_error(ErrorKind::kIo, path + ": " + what + ": " + std::strerror(errno));
  };
  // O_NONBLOCK: a FIFO must not block the open; fstat refuses it next.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return io_error("cannot open");
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    Error e = io_error("cannot stat");
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    if (S_ISDIR(st.st_mode)) return make_error(ErrorKind::kIo, path + ": is a directory, not a file");
    return make_error(ErrorKind::kIo, path + ": is " + file_kind(st.st_mode) + ", not a regular file");
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    // MAP_POPULATE: the file is read and its pages mapped now, at load, as
    // llama.cpp's loader does (its mmap prefetch), instead of one page fault
    // per 4 KiB in the first prefill (the cpu device reads the weights in
    // place: 1.2 GB of Qwen3-0.6B cost ~40% of a cold 32-token prefill).
    void* p = mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      Error e = io_error("cannot mmap");
      ::close(fd);
      return e;
    }
    file.data_ = static_cast<const uint8_t*>(p);
    // The file shrinking under us (truncated, or `cp` over it) would make a
    // read of the mapping a SIGBUS: guarded, it becomes an error naming it.
    file.guard_slot_ = guard_mapping(file.data_, file.size_, path);
  }
  ::close(fd);  // the mapping stays valid after close
  return file;
}

}  // namespace kern::load
