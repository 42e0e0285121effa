// The emulated kernels the simulated driver launches, and the global-memory
// shadow it feeds: the driver's one view of whatever executes kernels on the
// host. Two sources implement it: the SIMT emulator running the real
// kernels-src/cuda/*.cu (test/sim/simt/, the default when built), and the cpu
// twins (kernels-src/cpu, with the same parameter ABI), selected with
// KERN_SIM_KERNELS=twins to tell a driver bug from a kernel-emulation one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kern::sim {

/// One kernel launch as the driver hands it over (CUDA's launch geometry).
struct KernelLaunch {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
  uint32_t num_params = 0;  ///< entries of `params` (from the cubin's records)
  bool pdl = false;    ///< launched with programmatic stream serialization
  uint64_t seed = 0;   ///< block-order shuffle seed (KERN_SIM_SEED and the launch count)
};

/// An emulated kernel, found by its entry symbol.
class EmulatedKernel {
 public:
  virtual ~EmulatedKernel() = default;
  /// Runs the whole grid to completion. `params[i]` points at param i's
  /// value (cuLaunchKernel's kernelParams). Returns "" or the violation the
  /// emulation detected (race, out-of-bounds, barrier misuse, a PDL
  /// contract breach), with kernel, block and thread where it knows them.
  virtual std::string launch(const KernelLaunch& launch, void** params) const = 0;
  /// Param sizes in bytes as the emulated kernel declares them (compared
  /// with the cubin's records at module load); empty = not known.
  virtual std::vector<uint32_t> param_sizes() const = 0;
};

/// Which source the driver uses: "simt" (the SIMT emulator) or "twins".
std::string_view kernel_source_name();

/// The kernel for `symbol` from the selected source, or nullptr (static storage).
const EmulatedKernel* find_emulated_kernel(std::string_view symbol);

/// Global-memory shadow (allocations poisoned and unwritten until written):
/// a device allocation of `bytes` at `addr`, its release, and a write by a
/// copy, a memset or the simulated cublasLt.
void shadow_alloc(uint64_t addr, uint64_t bytes);
void shadow_free(uint64_t addr);
void shadow_write(uint64_t addr, uint64_t bytes);
/// A write by work that is a kernel launch on a GPU but is not emulated (the
/// simulated cublasLt's GEMM): a later PDL launch must pdl_wait() before
/// reading those bytes.
void shadow_launch_write(uint64_t addr, uint64_t bytes);

}  // namespace kern::sim
