// Whole-file reading and crash-safe writing. kern-verify writes the .kplan
// with write_file_atomic so a reader never sees a half-written plan.
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

/// What a file's st_mode is, for messages: "a FIFO", "a character device",
/// "a directory", "a socket", "a block device", "a regular file".
const char* file_kind(unsigned mode);

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory is written, fsync'ed and renamed over `path` (POSIX rename),
/// then the directory is fsync'ed. On any failure the temporary file is
/// removed, `path` is left as it was, and the error (kIo) names the path.
/// The new file gets mode 0644.
/// When `path` already exists and is not a regular file or a directory
/// (a character device such as /dev/null or /dev/stdout, a FIFO, a socket;
/// symlinks followed), the bytes are written into it with
/// write_existing_file instead: renaming over it would replace the device.
/// An empty `path` is an error (kUsage, "output path is empty").
Status write_file_atomic(const std::string& path, std::string_view bytes);

/// Writes `bytes` into the existing file at `path`, opened with O_WRONLY
/// only (never created, truncated or replaced): the direct path that
/// write_file_atomic takes for devices and FIFOs (opening a FIFO waits for a
/// reader). Every write error is reported (kIo, "PATH: write error: No
/// space left on device" for /dev/full), as is a failed close.
Status write_existing_file(const std::string& path, std::string_view bytes);

/// Checks, before any work is done, that write_file_atomic(path, ...) can
/// succeed as far as the file system says now: `path` is not empty (kUsage),
/// is not a directory, and either exists and is writable or its directory
/// exists, is a directory and is writable (access(2), W_OK). Errors (kIo)
/// name the path and the reason ("out/x.bin: cannot write there: out: No
/// such file or directory"). A full disk is only found when writing.
Status check_output_path(const std::string& path);

}  // namespace kern
