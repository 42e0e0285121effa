// A read-only memory mapping of a whole file (safetensors weights). The
// mapping is private and never written; an empty file maps to an empty span.
// Does not interpret the bytes: callers validate them. A file that shrinks
// while mapped is reported and ends the process (mapping_guard.h); one
// rewritten in place at the same size shows its new bytes (docs/runtime.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/result.h"

namespace kern::load {

/// Owns an mmap(2) of a file, PROT_READ / MAP_PRIVATE / MAP_POPULATE (read at open: the first use faults no page). Move-only.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  /// Maps `path` read-only and guards the mapping (guard_mapping). Errors (kind kIo): open/fstat/mmap failures
  /// (naming the path and strerror) and non-regular files ("PATH: is a FIFO,
  /// not a regular file"), refused before anything blocks or is read (the
  /// open is O_NONBLOCK).
  static Result<MappedFile> open(const std::string& path);

  /// The mapped bytes (borrowed; valid while this object lives).
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void unmap();

  const uint8_t* data_ = nullptr;  ///< mmap base; null for an empty file
  size_t size_ = 0;                ///< file size in bytes
  int guard_slot_ = -1;            ///< guard_mapping's slot, -1: unguarded
  std::string path_;
};

}  // namespace kern::load
