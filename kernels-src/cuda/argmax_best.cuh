// The (value, index) order of the greedy argmax (docs/kernels.md §9),
// shared by argmax.cu and the lm_head's last-block reduce in gemv.cu (§11):
// "a beats b iff a.v > b.v or (a.v == b.v and a.i < b.i)", starting from
// (-inf, INT_MAX); NaN never wins. A total order, so the winner does not
// depend on the order pairs are compared in. Needs kern_cuda_common.cuh's
// includes (cuda_bf16.h) and math_constants.h / climits.
#pragma once

#include <math_constants.h>

#include <climits>

// A named namespace, not an anonymous one: nvcc names the __shared__ arrays of
// functions with internal linkage after a per-path hash, which would make the
// fatbin (and its pinned sha256) depend on where the source was compiled.
namespace kern_argmax {

struct Best {
  float v;
  int i;
};

__device__ __forceinline__ void consider(Best& b, float v, int i) {
  if (v > b.v || (v == b.v && i < b.i)) {  // false for NaN
    b.v = v;
    b.i = i;
  }
}

__device__ __forceinline__ Best warp_best(Best b) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, b.v, o);
    const int i = __shfl_xor_sync(0xffffffffu, b.i, o);
    consider(b, v, i);
  }
  return b;
}

/// Best pair of the whole block (blockDim.x a multiple of 32); valid in thread 0.
__device__ __forceinline__ Best block_best(Best b) {
  __shared__ float sv[32];
  __shared__ int si[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  b = warp_best(b);
  if (lane == 0) {
    sv[warp] = b.v;
    si[warp] = b.i;
  }
  __syncthreads();
  if (warp == 0) {
    const int num_warps = blockDim.x >> 5;
    b = lane < num_warps ? Best{sv[lane], si[lane]} : Best{-CUDART_INF_F, INT_MAX};
    b = warp_best(b);
  }
  return b;
}

}  // namespace kern_argmax
