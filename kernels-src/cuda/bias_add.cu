// A projection's bias added in place to its output rows (docs/kernels.md
// §6a; Qwen2's q, k and v biases on the merged qkv row):
// x[r, i] = bf16(f32(x[r, i]) + f32(bias[i])), one rounding, as the cpu twin.
//
// Launch: grid [rows, 1, 1], block [256, 1, 1]; block r handles row r.
// Bytes moved: 4 rows n (x read and written) + 2 n (bias).
#include "kern_cuda_common.cuh"

using namespace kern_cuda;

/// kern_bias_add_bf16(inout bf16 x[rows, ld], in bf16 bias[n], i32 rows, i32 n, i32 ld)
extern "C" __global__ void __launch_bounds__(256) kern_bias_add_bf16(__nv_bfloat16* __restrict__ x,
                                                                     const __nv_bfloat16* __restrict__ bias, int rows,
                                                                     int n, int ld) {
  const int r = blockIdx.x;
  if (r >= rows || n <= 0 || ld < n) return;
  __nv_bfloat16* row = x + static_cast<int64_t>(r) * ld;
  for (int i = threadIdx.x; i < n; i += blockDim.x) row[i] = f32_to_bf16(bf16_to_f32(row[i]) + bf16_to_f32(bias[i]));
}
