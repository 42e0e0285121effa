// Device helpers shared by the kern CUDA kernels (docs/kernels.md): bf16
// conversion with a single round-to-nearest-even on store, 16-byte vector
// access to 8 bf16 at a time, and warp/block reductions by shuffle.
//
// Every kernel that includes this computes in f32 and rounds once, exactly
// like the cpu reference in kernels-src/cpu/. Vector paths are taken only when
// the row length and every pointer involved allow 16-byte (or 8-byte) access;
// otherwise a scalar path computes the same values.
#pragma once

#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>

namespace kern_cuda {

/// bf16 pair <-> 32-bit word, bit for bit (no conversion).
__device__ __forceinline__ float2 word_to_f32x2(uint32_t w) {
  __nv_bfloat162 h;
  static_assert(sizeof(h) == sizeof(w));
  memcpy(&h, &w, sizeof(w));
  return __bfloat1622float2(h);
}
__device__ __forceinline__ uint32_t f32x2_to_word(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // one RNE rounding each
  uint32_t w;
  memcpy(&w, &h, sizeof(w));
  return w;
}

__device__ __forceinline__ float bf16_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

/// f32 -> bf16 with round-to-nearest-even (NaN stays NaN).
__device__ __forceinline__ __nv_bfloat16 f32_to_bf16(float v) { return __float2bfloat16_rn(v); }

// Vector access. The loads and stores go through uint4 / uint2 so that they
// compile to one `ld.global.v4.u32` (`.nc` for read-only data) or
// `ld.global.v2.u32` each: a struct of __nv_bfloat162 compiles to four
// separate 4-byte loads instead (test/kernels/check_vector_loads.py checks
// the PTX). `p` must be 16-byte (8-byte) aligned; callers check.

/// Host builds (the SIMT emulator, test/sim/simt/) check that a vector
/// access is `bytes`-aligned: x86 does not fault where a GPU does, and the
/// host compiler may split the access. Nothing on the GPU.
__device__ __forceinline__ void expect_aligned(const void* p, uintptr_t bytes) {
#if defined(KERN_SIMT)
  ::kern::sim::rt::expect_aligned(p, bytes);
#else
  (void)p;
  (void)bytes;
#endif
}

/// Unpacks a 16-byte word of 8 bf16 into f32 (element j -> out[j]).
__device__ __forceinline__ void unpack8(uint4 v, float out[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 f = word_to_f32x2(w[j]);
    out[2 * j] = f.x;
    out[2 * j + 1] = f.y;
  }
}

/// Packs 8 f32 into a 16-byte word of bf16, one RNE rounding each.
__device__ __forceinline__ uint4 pack8(const float in[8]) {
  return make_uint4(f32x2_to_word(in[0], in[1]), f32x2_to_word(in[2], in[3]),
                    f32x2_to_word(in[4], in[5]), f32x2_to_word(in[6], in[7]));
}

/// 8 bf16 at `p` (16-byte aligned) as f32: one 16-byte load.
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float out[8]) {
  expect_aligned(p, 16);
  unpack8(*reinterpret_cast<const uint4*>(p), out);
}

/// 8 bf16 at `p` (16-byte aligned, data no kernel writes during the launch,
/// e.g. weights) as f32 through the read-only path: one `ld.global.nc.v4`.
__device__ __forceinline__ void load8_ro(const __nv_bfloat16* p, float out[8]) {
  expect_aligned(p, 16);
  unpack8(__ldg(reinterpret_cast<const uint4*>(p)), out);
}

/// Stores 8 f32 as bf16 at `p` (16-byte aligned): one 16-byte store.
__device__ __forceinline__ void store8(__nv_bfloat16* p, const float in[8]) {
  expect_aligned(p, 16);
  *reinterpret_cast<uint4*>(p) = pack8(in);
}

/// 4 bf16 at `p` (8-byte aligned) as f32: one 8-byte load.
__device__ __forceinline__ void load4(const __nv_bfloat16* p, float out[4]) {
  expect_aligned(p, 8);
  const uint2 v = *reinterpret_cast<const uint2*>(p);
  const float2 a = word_to_f32x2(v.x), b = word_to_f32x2(v.y);
  out[0] = a.x;
  out[1] = a.y;
  out[2] = b.x;
  out[3] = b.y;
}

/// Stores 4 f32 as bf16 at `p` (8-byte aligned): one 8-byte store.
__device__ __forceinline__ void store4(__nv_bfloat16* p, const float in[4]) {
  expect_aligned(p, 8);
  *reinterpret_cast<uint2*>(p) = make_uint2(f32x2_to_word(in[0], in[1]), f32x2_to_word(in[2], in[3]));
}

// Programmatic dependent launch (docs/gpu.md). A kernel whose steps may be
// marked "pdl": true calls pdl_wait() before it reads anything an earlier
// launch wrote (or writes anything an earlier launch reads), and
// pdl_launch_dependents() once the next launch may start its own preamble.
// Both are no-ops below sm_90 and when the launch was not a PDL launch (the
// previous kernel has then completed before this one starts).

/// griddepcontrol.wait: blocks until the previous launch on the stream has
/// completed and its memory is visible.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#elif defined(KERN_SIMT)
  ::kern::sim::rt::pdl_wait();  // the SIMT emulator (test/sim/simt/) checks the PDL contract
#endif
}

/// griddepcontrol.launch_dependents: lets the next launch begin (it still
/// waits in its own pdl_wait() for this launch to complete).
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#elif defined(KERN_SIMT)
  ::kern::sim::rt::pdl_launch_dependents();
#endif
}

/// Starts pulling the 128-byte line holding `p` into L2; used for
/// weights before pdl_wait(), which no launch writes.
__device__ __forceinline__ void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
  (void)p;  // host builds (the SIMT emulator): nothing to prefetch
#endif
}

/// Declares `name`, the launch's dynamic shared memory (16-byte aligned), as
/// a `type[]`. A macro so that host builds (the SIMT emulator, test/sim/simt/)
/// can give each block its own buffer: `extern __shared__` has no host meaning.
#if defined(KERN_SIMT)
#define KERN_DYNAMIC_SHARED(type, name) type* const name = static_cast<type*>(::kern::sim::rt::dynamic_shared())
#else
#define KERN_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
#endif

/// The bytes of dynamic shared memory this launch was given (sharedMemBytes
/// of cuLaunchKernel: PTX %dynamic_smem_size), so a kernel can refuse a
/// launch that gave it less than its params need.
__device__ __forceinline__ uint32_t dynamic_shared_bytes() {
#if defined(__CUDA_ARCH__)
  uint32_t v;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(v));
  return v;
#elif defined(KERN_SIMT)
  return ::kern::sim::rt::dynamic_shared_bytes();
#else
  return 0;  // the host pass of nvcc: never called
#endif
}

/// True when `p` is aligned to `bytes` (a power of two).
__device__ __forceinline__ bool aligned_to(const void* p, uintptr_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

/// Sum over the 32 lanes of a warp; every lane gets the result.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Max over the 32 lanes of a warp; every lane gets the result.
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum over a whole block (blockDim.x a multiple of 32, at most 1024);
/// every thread gets the result. Uses 32 floats of static shared memory and
/// two __syncthreads, so it may be called repeatedly.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int num_warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // a previous call may still be reading `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < num_warps ? partial[lane] : 0.0f;
  return warp_sum(v);
}

}  // namespace kern_cuda
