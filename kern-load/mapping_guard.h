// Turning the SIGBUS of a mapped file that shrank under the process (the
// weights truncated, or rewritten in place by `cp`, while kern-run or bench
// reads them) into one error line naming the file, instead of a silent death
// by signal (docs/runtime.md "Files that change under a running process").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kern::load {

/// Most mappings guarded at once; a mapping beyond them is not guarded (a
/// SIGBUS in it kills as before). kern-run maps one weights file.
inline constexpr int kMaxGuardedMappings = 64;

/// Registers the mapping [`base`, `base` + `size_bytes`) of `path` and, on
/// first use, installs the SIGBUS handler (SA_SIGINFO; the previous handler,
/// such as a sanitizer's, still gets every SIGBUS outside the guarded
/// mappings). A SIGBUS whose fault address lies in a guarded mapping writes
/// "<program>: error: <path>: the file was truncated while in use (offset N B
/// is past its end now; ...)" to stderr, removes the temporary output being
/// written, if any (remove_pending_temp_file, common/temp_cleanup.h), and
/// ends the process with exit status 2 (an I/O error, as kIo). The handler is
/// async-signal-safe: atomics, write(2), unlink(2), _exit(2). Returns the slot
/// to pass to unguard_mapping, or -1 when every slot is taken.
int guard_mapping(const void* base, size_t size_bytes, const std::string& path);

/// Unregisters slot `slot` (from guard_mapping; -1 is ignored) before the
/// mapping is unmapped.
void unguard_mapping(int slot);

}  // namespace kern::load
