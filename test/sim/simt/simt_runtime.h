// The SIMT emulator's runtime calls, as the CUDA shim (simt_shim.h) and the
// per-kernel trampolines (simt_entry.h) make them from the kernel code. Not
// part of the driver-facing API (sim_api.h). Implemented in simt_runtime.cpp,
// which is compiled without the access instrumentation of the kernel code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "test/sim/simt/sim_api.h"

namespace kern::sim::rt {

/// CUDA's uint3 for threadIdx / blockIdx / blockDim / gridDim, returned in
/// registers (the instrumented kernel code reads no emulator memory).
struct Idx3 {
  unsigned x, y, z;
};

Idx3 thread_idx();
Idx3 block_idx();
Idx3 block_dim();
Idx3 grid_dim();

/// __syncthreads(): waits until every thread of the block arrives; a thread
/// that exited while others wait is a violation.
void syncthreads();
/// __syncwarp(mask): waits for every lane of `mask`; orders their shared accesses.
void syncwarp(unsigned mask);

/// Warp shuffle kinds (CUDA's __shfl_sync, _up, _down, _xor).
enum class Shfl { kIdx, kUp, kDown, kXor };
/// One 32-bit shuffle: every lane of `mask` must arrive with the same mask;
/// `arg` is the source lane, delta or lane mask; `width` a power of two <= 32.
uint32_t shfl(Shfl kind, unsigned mask, uint32_t value, int arg, int width);
/// Warp votes (__ballot_sync / __any_sync / __all_sync): the ballot of `pred` over `mask`.
unsigned ballot(unsigned mask, bool pred);

/// Atomics on global or shared memory (checked like any access; a global
/// word an atomic touched must be zero again when the launch ends).
int atomic_add(int* p, int v);
unsigned atomic_add(unsigned* p, unsigned v);
float atomic_add(float* p, float v);
int atomic_exch(int* p, int v);
int atomic_cas(int* p, int compare, int v);
unsigned atomic_cas(unsigned* p, unsigned compare, unsigned v);

/// A vector access of `bytes` at `p` (kern_cuda_common.cuh's load8 ...,
/// __ldg of a vector type): must be `bytes`-aligned, as on a GPU.
void expect_aligned(const void* p, size_t bytes);

/// __threadfence(): blocks run one after another here; nothing to order.
void threadfence();

/// griddepcontrol.wait / launch_dependents (kern_cuda_common.cuh).
void pdl_wait();
void pdl_launch_dependents();

/// __trap(): ends the launch with a violation.
[[noreturn]] void trap();

/// The block's dynamic shared memory (LaunchParams::dynamic_shared_bytes,
/// 16-byte aligned, poisoned at block start).
void* dynamic_shared();

/// Its size in bytes (the launch's sharedMemBytes: %dynamic_smem_size on a GPU).
unsigned dynamic_shared_bytes();

/// The instantiated kernel called with its parameters from `param_block`.
using Body = void (*)(const unsigned char* param_block);

/// Runs every block of the grid of `kernel` (the trampoline's launch): the
/// parameters were copied to `param_block` (`param_bytes`), which the
/// kernel code may read. Returns "" or the first violation.
std::string run_grid(std::string_view kernel, const LaunchParams& launch, Body body,
                     const unsigned char* param_block, size_t param_bytes);

/// Registers one kernel entry (called by each family's registration function).
void register_kernel(const KernelEntry* entry);

}  // namespace kern::sim::rt
