// The CUDA device-side shim that lets kernels-src/cuda/*.cu compile
// unchanged as host C++ (clang 14) for the SIMT emulator: the CUDA headers'
// host mode give the types (uint4, float2, __nv_bfloat16 and its
// conversions); this adds the built-in variables, barriers, warp
// collectives, atomics, cache-hinted loads and the intrinsics the kernels
// use, each forwarding to the emulator's runtime (simt_runtime.h).
// Included first by each family's translation unit (kernels/*.cpp).
#pragma once

#define KERN_SIMT 1

#include <cuda_bf16.h>
#include <math_constants.h>
#include <vector_functions.h>
#include <vector_types.h>

#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "test/sim/simt/simt_runtime.h"

// Per-block static shared memory: function-scope statics in one section,
// which the emulator poisons at every block start and whose accesses it
// checks (clang honours the section on statics in template instantiations).
#undef __shared__
#define __shared__ static __attribute__((section("kern_sim_shared")))
#undef __launch_bounds__
#define __launch_bounds__(...)

#define threadIdx (::kern::sim::rt::thread_idx())
#define blockIdx (::kern::sim::rt::block_idx())
#define blockDim (::kern::sim::rt::block_dim())
#define gridDim (::kern::sim::rt::grid_dim())
#define warpSize 32

inline void __syncthreads() { ::kern::sim::rt::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::kern::sim::rt::syncwarp(mask); }
inline void __threadfence() { ::kern::sim::rt::threadfence(); }
[[noreturn]] inline void __trap() { ::kern::sim::rt::trap(); }

namespace kern::sim::shim {
/// A 4-byte value through a 32-bit shuffle (CUDA's shuffles move 32-bit words).
template <typename T>
inline T shfl(::kern::sim::rt::Shfl kind, unsigned mask, T v, int arg, int width) {
  static_assert(sizeof(T) == 4, "the emulator shuffles 32-bit values");
  return std::bit_cast<T>(::kern::sim::rt::shfl(kind, mask, std::bit_cast<uint32_t>(v), arg, width));
}
}  // namespace kern::sim::shim

template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  return ::kern::sim::shim::shfl(::kern::sim::rt::Shfl::kIdx, mask, v, src_lane, width);
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::kern::sim::shim::shfl(::kern::sim::rt::Shfl::kUp, mask, v, static_cast<int>(delta), width);
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::kern::sim::shim::shfl(::kern::sim::rt::Shfl::kDown, mask, v, static_cast<int>(delta), width);
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return ::kern::sim::shim::shfl(::kern::sim::rt::Shfl::kXor, mask, v, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int pred) { return ::kern::sim::rt::ballot(mask, pred != 0); }
inline int __any_sync(unsigned mask, int pred) { return ::kern::sim::rt::ballot(mask, pred != 0) != 0; }
inline int __all_sync(unsigned mask, int pred) { return ::kern::sim::rt::ballot(mask, pred != 0) == mask; }

inline int atomicAdd(int* p, int v) { return ::kern::sim::rt::atomic_add(p, v); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return ::kern::sim::rt::atomic_add(p, v); }
inline float atomicAdd(float* p, float v) { return ::kern::sim::rt::atomic_add(p, v); }
inline int atomicExch(int* p, int v) { return ::kern::sim::rt::atomic_exch(p, v); }
inline int atomicCAS(int* p, int c, int v) { return ::kern::sim::rt::atomic_cas(p, c, v); }
inline unsigned atomicCAS(unsigned* p, unsigned c, unsigned v) { return ::kern::sim::rt::atomic_cas(p, c, v); }

// Cache-hinted loads: plain loads here (checked like any other access).
template <typename T>
inline T __ldg(const T* p) {
  ::kern::sim::rt::expect_aligned(p, alignof(T));
  return *p;
}
template <typename T>
inline T __ldcg(const T* p) {
  ::kern::sim::rt::expect_aligned(p, alignof(T));
  return *p;
}

// Reinterpretations and the fast-math intrinsics. __expf is the GPU's
// ex2.approx-based approximation there; here it is expf, as in the cpu twins
// (docs/kernels.md says which results a GPU cannot reproduce bit for bit).
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline float __int_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __expf(float x) { return ::expf(x); }
/// A product never contracted into an FMA (here nothing is: -ffp-contract=off).
inline float __fmul_rn(float a, float b) { return a * b; }

// CUDA's unqualified integer min/max overloads.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
