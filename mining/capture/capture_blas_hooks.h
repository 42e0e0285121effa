// cublasLt's entry points, wrapped when the program dlsym()s them (kern's
// cuda device and the CUDA runtime's users reach cublasLt by dlopen + dlsym;
// docs/mining.md "Library calls").
#pragma once

namespace kern::capture {

/// The wrapper to hand out for cublasLt entry point `name` whose real
/// address is `fn`; `fn` itself for a name not recorded.
void* wrap_blas(const char* name, void* fn);

/// The library call the calling thread is inside ("cublasLtMatmul"), or
/// null: launches made meanwhile are the library's own kernels.
const char* current_library_call();

}  // namespace kern::capture
