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

#include <cuda_bf16.h>

namespace kern_cuda {

/// Eight bf16 values as one 16-byte word (one `ld.global.v4.u32`).
struct alignas(16) Bf16x8 {
  __nv_bfloat162 h[4];
};

/// Four bf16 values as one 8-byte word.
struct alignas(8) Bf16x4 {
  __nv_bfloat162 h[2];
};

__device__ __forceinline__ float bf16_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

/// f32 -> bf16 with round-to-nearest-even (NaN stays NaN).
__device__ __forceinline__ __nv_bfloat16 f32_to_bf16(float v) { return __float2bfloat16_rn(v); }

/// Unpacks 8 bf16 into f32 (element j of the vector -> out[j]).
__device__ __forceinline__ void unpack8(const Bf16x8& v, float out[8]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float2 f = __bfloat1622float2(v.h[j]);
    out[2 * j] = f.x;
    out[2 * j + 1] = f.y;
  }
}

/// Packs 8 f32 into bf16 with one RNE rounding each.
__device__ __forceinline__ Bf16x8 pack8(const float in[8]) {
  Bf16x8 v;
#pragma unroll
  for (int j = 0; j < 4; ++j) v.h[j] = __floats2bfloat162_rn(in[2 * j], in[2 * j + 1]);
  return v;
}

__device__ __forceinline__ void unpack4(const Bf16x4& v, float out[4]) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    float2 f = __bfloat1622float2(v.h[j]);
    out[2 * j] = f.x;
    out[2 * j + 1] = f.y;
  }
}

__device__ __forceinline__ Bf16x4 pack4(const float in[4]) {
  Bf16x4 v;
#pragma unroll
  for (int j = 0; j < 2; ++j) v.h[j] = __floats2bfloat162_rn(in[2 * j], in[2 * j + 1]);
  return v;
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
