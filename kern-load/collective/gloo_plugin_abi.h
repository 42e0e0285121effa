// The C interface of kern's Gloo plugin (kern-gloo.so, gloo_plugin.cpp),
// which kern-load opens with dlopen (gloo_collective.cpp) so that binaries
// without tensor parallelism never need libgloo at run time, and a missing
// libgloo is an error naming the Debian package, not a loader failure
// before main (docs/parallel.md). Plain C types only: the plugin is C++
// against Gloo, the loader never sees a Gloo type.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

/// Bumped when a signature below changes; the loader refuses another.
inline constexpr uint32_t kKernGlooAbiVersion = 2;

/// Returns kKernGlooAbiVersion.
using KernGlooAbiVersionFn = uint32_t (*)();

/// Joins the world: rank `rank` of `world`, rendezvous through the files of
/// directory `rendezvous_dir` (Gloo's FileStore), pairs over TCP on
/// 127.0.0.1 (ephemeral ports). `timeout_ms` bounds the rendezvous and every
/// later wait. Returns 0 and the context in *out, or -1 and a message in
/// err[0 .. err_size).
using KernGlooConnectFn = int (*)(const char* rendezvous_dir, int rank, int world, int timeout_ms, void** out,
                                  char* err, size_t err_size);

/// All-gather: out[r * size_bytes ...] = rank r's in, waiting at most
/// `timeout_ms` (0: the connect timeout). Returns 0, or -1 with a message
/// naming the ranks that did not answer (or left) in err.
using KernGlooAllGatherFn = int (*)(void* ctx, const void* in, void* out, size_t size_bytes, int timeout_ms,
                                    char* err, size_t err_size);

/// Closes the connections and frees the context (null is ignored).
using KernGlooCloseFn = void (*)(void* ctx);
}
