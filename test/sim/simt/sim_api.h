// The SIMT emulator's interface (docs/gpu.md "The simulated GPU"): kern's
// CUDA kernels (kernels-src/cuda/*.cu) compiled unchanged as host C++ and run
// on the CPU, each CUDA thread a fiber, with CUDA's barrier, warp-collective
// and memory rules checked. The simulated driver (test/sim/driver/) and the
// comparison harness (test/sim/simt/sim_compare.cpp) call only this header.
//
// Threading: launches are serialised by a process-wide lock; every function
// here may be called from any thread. "Device memory" is host memory the
// caller owns (the simulated driver's cuMemAlloc); the emulator only keeps a
// shadow of it, fed by the on_* calls below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kern::sim {

/// A grid or block extent (CUDA's dim3).
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// One launch, as cuLaunchKernel / cuLaunchKernelEx give it.
struct LaunchParams {
  Dim3 grid, block;
  unsigned dynamic_shared_bytes = 0;  ///< sharedMemBytes of the launch
  /// cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
  /// = 1: the kernel may start before the previous launch on the stream has
  /// completed, so before pdl_wait() it must not read anything an earlier
  /// launch wrote nor write anything an earlier launch read or wrote.
  bool pdl = false;
  /// Seeds the order in which the grid's blocks run (0: in order x, y, z).
  uint64_t block_order_seed = 0;
};

/// One emulated kernel entry point.
struct KernelEntry {
  /// The entry symbol, as cuModuleGetFunction is asked for it (the extern "C"
  /// name in the fatbin).
  std::string_view name;
  /// The family (the .cu file's stem, e.g. "gemv"; its fatbin is <family>.fatbin).
  std::string_view family;
  /// Byte size and offset of each parameter in the parameter buffer, from
  /// the kernel's C++ signature with CUDA's layout (each parameter at its
  /// natural alignment); the cubin's .nv.info EIATTR_KPARAM_INFO records
  /// must agree (test/sim/simt/sim_abi_test.py checks it).
  std::vector<size_t> param_sizes, param_offsets;
  /// Runs the whole grid to completion. `params` as cuLaunchKernel's
  /// kernelParams: one pointer per parameter, to param_sizes[i] bytes.
  /// Returns "" on success, else the first violation found, naming the
  /// kernel, the block and the thread ("kern_x block (3,0,0) thread
  /// (17,0,0): ..."). A launch that failed leaves device memory as the
  /// kernel left it.
  std::string (*launch)(const LaunchParams& launch, void** params) = nullptr;
};

/// The kernel named `name`, or nullptr when no emulated kernel has it.
const KernelEntry* find_kernel(std::string_view name);

/// Every emulated kernel (all families).
const std::vector<const KernelEntry*>& all_kernels();

// Global memory shadow. The driver reports every allocation and every byte
// the host side writes (copies, memsets), so the emulator can report a
// kernel access outside every live allocation, a read of bytes nothing has
// written since allocation, and the PDL contract above. Launches themselves
// are tracked by launch(). Addresses are host addresses.

/// `bytes` at `p` became device memory (contents: never written).
void on_alloc(const void* p, size_t bytes);
/// The allocation starting at `p` was freed (unknown `p`: ignored).
void on_free(const void* p);
/// The host side (a copy or memset) wrote `bytes` at `p`: they count as
/// written, by no launch. Ranges outside every allocation are ignored.
void on_write(const void* p, size_t bytes);
/// `bytes` at `p` count as written by a launch before the next one, one the
/// emulator did not run (a test standing in for the previous program's
/// launches): a PDL launch must pdl_wait() before reading them.
void on_launch_write(const void* p, size_t bytes);
/// Forgets every allocation (a test between cases, the driver's cuCtxDestroy).
void reset_memory();

/// Options of the checks (process-wide; defaults: everything on).
struct CheckOptions {
  bool shared_races = true;       ///< conflicting shared-memory accesses between barriers
  bool shared_uninit = true;      ///< reads of shared memory not written in this block
  bool global_bounds = true;      ///< accesses outside every live allocation
  bool global_uninit = true;      ///< reads of never-written device memory
  bool alignment = true;          ///< every access naturally aligned (16-byte vectors at 16)
  bool pdl = true;                ///< the PDL contract, and a PDL launch that never calls pdl_wait()
  bool counters = true;           ///< words updated by atomics back at zero after the launch
};
void set_check_options(const CheckOptions& options);
CheckOptions check_options();

}  // namespace kern::sim
