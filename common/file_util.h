// Whole-file reading and crash-safe writing. kern-verify writes the .kplan
// with write_file_atomic so a reader never sees a half-written plan.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace kern {

/// Reads the whole file at `path` as bytes. Errors (kIo) name the path and
/// the OS reason ("m.json: cannot open: No such file or directory"); a
/// directory is an error.
Result<std::string> read_file(const std::string& path);

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory is written, fsync'ed and renamed over `path` (POSIX rename),
/// then the directory is fsync'ed. On any failure the temporary file is
/// removed, `path` is left as it was, and the error (kIo) names the path.
/// The new file gets mode 0644.
Status write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace kern
