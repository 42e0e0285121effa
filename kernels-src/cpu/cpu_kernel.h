// The cpu reference kernels' calling convention. A reference kernel receives
// exactly what cuLaunchKernel would: the launch geometry and `kernelParams`,
// an array of pointers to each argument's value (docs/kernels.md gives every
// kernel's ABI). Device pointers are host pointers on the cpu device.
// Reference kernels compute the whole result of the launch (they do not
// emulate blocks) and are the numeric reference for the CUDA kernels.
//
// Every kernel is registered together with its extent declaration
// (CpuExtentFn): from the launch's scalar params it states how many bytes it
// may touch through each pointer param, and the cpu device checks those
// extents against the buffers it allocated before it runs the kernel
// (docs/kernels.md "Memory extents"). A CpuKernel cannot be built without one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kern::cpu {

class Collective;
class GemvPackedStore;

/// One launch as the cpu device sees it.
struct CpuLaunch {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint64_t shared_mem_bytes = 0;
  void* const* args = nullptr;  ///< kernelParams: args[i] points at param i's value (borrowed)
  size_t num_args = 0;
  /// Bytes from pointer param i to the end of the buffer it points into, by
  /// param index (0 for scalars and unknown pointers); set by the cpu device
  /// (borrowed), null when the caller cannot know (a direct kernel test).
  /// Kernels whose accesses depend on data (a slot, a page, a position) check
  /// those accesses against it; accesses fixed by scalar params are declared
  /// in CpuExtents and checked by the device instead.
  const uint64_t* avail = nullptr;
  /// The device's tensor-parallel endpoint (borrowed), for the collective
  /// extern ops; null on a device of one rank (the verifier keeps
  /// collectives out of such plans, E0168, and the ops refuse a null one).
  Collective* collective = nullptr;
  /// The device's packed decode GEMV weights (borrowed; gemv_packed.h): a
  /// GEMV whose w it holds reads the packed copy (same bits, less work per
  /// byte); null, or a w it does not hold, reads w as given.
  const GemvPackedStore* gemv_packed = nullptr;

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

/// The most params a cpu kernel may have (the largest ABI has 16).
inline constexpr size_t kMaxCpuParams = 32;

/// What one launch may touch through its pointer params, declared by the
/// kernel from its scalar params: param i may read or write bytes
/// [0, bytes[i]) counted from its pointer. 0 = not dereferenced (scalar
/// params, and pointers a launch with these sizes does not use). An extent
/// too large for u64 saturates to UINT64_MAX (always rejected).
struct CpuExtents {
  uint64_t bytes[kMaxCpuParams] = {};
  const char* names[kMaxCpuParams] = {};  ///< the ABI name of each declared param

  /// Declares that pointer param `index` (ABI name `name`, a string literal)
  /// may touch `size_bytes` bytes from its pointer. `index` < kMaxCpuParams.
  void touch(size_t index, const char* name, uint64_t size_bytes) {
    bytes[index] = size_bytes;
    names[index] = name;
  }
};

/// A kernel's extent declaration: fills `out` from `launch`'s scalar params
/// (it must not dereference a pointer param). Invalid scalars (negative
/// sizes) may be declared as 0: the kernel rejects them before touching
/// memory. Returns an error only for a launch it cannot describe.
using CpuExtentFn = Status (*)(const CpuLaunch& launch, CpuExtents& out);

/// A registered reference kernel: the kernel and its extent declaration,
/// both required (the consteval constructor refuses a null one at compile
/// time, so a kernel cannot be registered without its extents).
struct CpuKernel {
  CpuKernelFn run;
  CpuExtentFn extents;

  consteval CpuKernel(CpuKernelFn run_fn, CpuExtentFn extents_fn) : run(run_fn), extents(extents_fn) {
    if (run_fn == nullptr || extents_fn == nullptr) {
      throw "a cpu kernel is registered with its run function and its extent declaration";
    }
  }
};

/// Looks up the reference kernel registered for a cubin symbol or an
/// `extern:` op name; nullptr when none is registered. Static storage.
const CpuKernel* find_cpu_kernel(std::string_view symbol);

}  // namespace kern::cpu
