// Finding the CUDA driver and cublasLt at run time (docs/gpu.md "The cuda
// device"): the loader's own search first (ld.so cache, LD_LIBRARY_PATH),
// then the CUDA toolkit directories, then the lib/ directories of installed
// CUDA Python wheels (torch's site-packages/nvidia/*/lib), because on GPU
// machines built around a Python stack cublasLt often lives only there.
// Wheel directories are found by globbing the site-packages of every
// python3 on PATH (and $VIRTUAL_ENV), never by running Python.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace kern::load::cuda {

/// The environment the search reads, separated from the process so tests can
/// point it at a fabricated directory tree.
struct LibrarySearchEnv {
  std::string cuda_home;     ///< $CUDA_HOME, else $CUDA_PATH ("" when unset)
  std::string path;          ///< $PATH (':'-separated)
  std::string virtual_env;   ///< $VIRTUAL_ENV ("" when unset)
  /// Directories searched after the toolkit's and before the wheels' (the
  /// driver's usual places outside the loader cache; empty for cublasLt).
  std::vector<std::string> extra_dirs;
  /// Prefixes whose lib/python3*/{site,dist}-packages are globbed besides the
  /// ones derived from PATH (default /usr/local and /usr).
  std::vector<std::string> python_prefixes = {"/usr/local", "/usr"};
  /// When set, incremented once per file-system probe of the search (a
  /// directory listed, a file or directory examined), so tests bound the
  /// work by counting it, never by timing it.
  uint64_t* probe_count = nullptr;

  /// CUDA_HOME/CUDA_PATH, PATH and VIRTUAL_ENV of this process.
  static LibrarySearchEnv from_process();
};

/// Directories to search after the loader, in order, without duplicates:
/// `$CUDA_HOME/lib64`, `$CUDA_HOME/targets/x86_64-linux/lib`,
/// `/usr/local/cuda/lib64`, `/usr/local/cuda/targets/x86_64-linux/lib`,
/// `env.extra_dirs`, then every existing `<site-packages>/nvidia/<pkg>/lib`
/// (sorted) of each Python prefix: `$VIRTUAL_ENV`, the parent of each PATH
/// directory holding a `python3*` executable, then `env.python_prefixes`.
/// Toolkit directories are listed whether or not they exist (the error
/// names them); wheel directories only when they exist. Each distinct PATH
/// directory is listed once and each prefix globbed once, however often
/// they repeat.
std::vector<std::string> cuda_library_dirs(const LibrarySearchEnv& env);

/// A library opened by `open_cuda_library`.
struct OpenedLibrary {
  void* handle = nullptr;  ///< dlopen handle, owned by the caller (dlclose)
  std::string path;        ///< what dlopen was given: a bare soname (loader) or a full path
};

/// Opens the first of `sonames` that loads: each soname (in order) through the
/// loader, then as `<dir>/<soname>` for each of `dirs` where that file exists.
/// dlopen flags RTLD_NOW | RTLD_LOCAL. Error (kDevice): "dlopen <first
/// soname> failed: <dlerror>" followed by every other attempt ("; dlopen
/// <path> failed: ...") and the directories that held none of the sonames
/// ("; no <sonames> in <dirs>"), so a user sees exactly what was tried.
Result<OpenedLibrary> open_cuda_library(const std::vector<std::string>& sonames,
                                        const std::vector<std::string>& dirs, uint64_t* probe_count = nullptr);

/// open_cuda_library(sonames, cuda_library_dirs(env)), except that when the
/// loader alone opens the first (newest) soname nothing is scanned: no
/// directory of PATH, the toolkit or the wheels is examined.
Result<OpenedLibrary> search_cuda_library(const std::vector<std::string>& sonames, const LibrarySearchEnv& env);

/// The driver's directories besides the toolkit's, searched before the wheels':
/// containers mount it under /usr/local/nvidia; distributions install it in
/// /usr/lib/x86_64-linux-gnu or /usr/lib64 (normally in the loader cache).
/// Never a toolkit's lib64/stubs: that stub loads and then fails every call.
inline const std::vector<std::string> kCudaDriverDirs = {"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
                                                         "/usr/lib/x86_64-linux-gnu", "/usr/lib64"};

/// open_cuda_library({soname}) over this process's environment with
/// kCudaDriverDirs: the CUDA driver (used by the cuda device and the probe
/// of --device auto, so both find the same library).
Result<OpenedLibrary> open_cuda_driver(const std::string& soname = "libcuda.so.1");

}  // namespace kern::load::cuda
