// Whole-file reading (file_util.cpp) and crash-safe writing of outputs
// (file_write.cpp). kern-verify writes the .kplan with write_file_atomic so a
// reader never sees a half-written plan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kern {

/// The default cap of read_file: larger inputs are refused, not read.
inline constexpr uint64_t kDefaultMaxReadBytes = uint64_t{256} << 20;  // 256 MiB

/// Reads the whole file at `path` as bytes, at most `max_bytes`. The file is
/// opened with O_NONBLOCK and checked with fstat before anything is read, so
/// a FIFO, a device (/dev/zero) or a socket is refused at once instead of
/// blocking or streaming forever. Errors (kIo) name the path and the reason:
/// "m.json: cannot open: No such file or directory", "PATH: is a directory,
/// not a file", "PATH: is a FIFO, not a regular file", "PATH: is 3221225472 B;
/// the limit is 268435456 B".
Result<std::string> read_file(const std::string& path, uint64_t max_bytes = kDefaultMaxReadBytes);

/// Reads standard input to its end, at most `max_bytes`. Errors: stdin is
/// closed (kUsage, "stdin is closed"), more than `max_bytes` (kUsage), a
/// read error (kIo).
Result<std::string> read_stdin(uint64_t max_bytes = kDefaultMaxReadBytes);

/// The kIo error for a failed system call on `path`: "PATH: WHAT: strerror(err)"
/// (`err` an errno value), e.g. "m.json: cannot open: No such file or directory".
Error io_error(const std::string& path, const std::string& what, int err);

/// What a file's st_mode is, for messages: "a FIFO", "a character device",
/// "a directory", "a socket", "a block device", "a regular file".
const char* file_kind(unsigned mode);

/// Writes `bytes` to the output `path` (file_write.cpp). A regular file, or
/// a new one, is replaced atomically: a temporary file beside it is written,
/// fsync'ed and renamed over it (POSIX rename), then the directory is
/// fsync'ed; symlinks are followed first, so a link to the output stays a
/// link. On any failure the temporary file is removed and the output is left
/// as it was; a signal that ends the process removes it too (TempFileGuard,
/// common/temp_cleanup.h). The new file gets mode 0644.
/// Anything else is written through, never renamed over (renaming over
/// /dev/null or /dev/stdout as root would replace it with a regular file):
/// a name for one of this process's descriptors (/dev/stdout, /dev/stderr,
/// /dev/fd/N, /proc/self/fd/N, also through symlinks) is written to that
/// descriptor at its current position, after stdio's buffer for it is
/// flushed; an existing device, FIFO or socket, or a file under /proc, goes
/// through write_existing_file. Errors (kIo) name `path`; an empty `path` is
/// kUsage ("output path is empty").
Status write_file_atomic(const std::string& path, std::string_view bytes);

/// Writes `bytes` into the existing file at `path`, opened with O_WRONLY
/// only (never created, truncated or replaced): the direct path that
/// write_file_atomic takes for devices and FIFOs. The open does not block: a
/// FIFO with no reader is an error at once (kIo, "PATH: is a FIFO with no
/// reader; nothing written ..."). Every write error is reported (kIo, "PATH:
/// write error: No space left on device" for /dev/full), as is a failed close.
Status write_existing_file(const std::string& path, std::string_view bytes);

/// Checks, before any work is done, that write_file_atomic(path, ...) can
/// succeed as far as the file system says now: `path` is not empty (kUsage),
/// is not a directory, and is a descriptor of this process open for writing,
/// or exists and is writable (a regular file's directory too), or its
/// directory exists, is a directory and is writable (access(2), W_OK).
/// Errors (kIo) name the path and the reason ("out/x.bin: cannot write there:
/// out: No such file or directory"). A full disk, or a FIFO's missing
/// reader, is only found when writing.
Status check_output_path(const std::string& path);

/// Whether `a` and `b` name the same file, whatever the spelling ("./m.json",
/// a hard link, a symlink): the same device and inode when both exist; when
/// one does not exist yet, the same directory (device and inode) and the same
/// last name (so "out.bin" and "./out.bin" are one output). False when either
/// cannot be examined.
bool same_file(const std::string& a, const std::string& b);

/// Whether write_file_atomic replaces `path` by rename (a regular file or a
/// new one) rather than writing through it: two outputs naming one such file
/// would keep only the last, two writes through /dev/stdout keep both.
bool output_is_replaced(const std::string& path);

}  // namespace kern
