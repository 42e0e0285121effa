// The cpu reference kernels' calling convention. A reference kernel receives
// exactly what cuLaunchKernel would: the launch geometry and `kernelParams`,
// an array of pointers to each argument's value (docs/kernels.md gives every
// kernel's ABI). Device pointers are host pointers on the cpu device.
// Reference kernels compute the whole result of the launch (they do not
// emulate blocks) and are the numeric reference for the CUDA kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kern::cpu {

/// One launch as the cpu device sees it.
struct CpuLaunch {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint64_t shared_mem_bytes = 0;
  void* const* args = nullptr;  ///< kernelParams: args[i] points at param i's value (borrowed)
  size_t num_args = 0;

  /// Reads param `i` as a value of type T (a pointer param is read as a pointer).
  template <typename T>
  T arg(size_t i) const {
    T v;
    std::memcpy(&v, args[i], sizeof(T));
    return v;
  }
};

/// A reference kernel. Returns an error for arguments it cannot honour
/// (e.g. a negative dimension); never reads or writes out of the bounds its
/// scalar params describe.
using CpuKernelFn = Status (*)(const CpuLaunch& launch);

/// Looks up the reference kernel registered for a cubin symbol or an
/// `extern:` op name; nullptr when none is registered.
CpuKernelFn find_cpu_kernel(std::string_view symbol);

}  // namespace kern::cpu
