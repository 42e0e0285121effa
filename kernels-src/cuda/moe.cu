// The mixture-of-experts kernels (docs/kernels.md §18, Qwen3-MoE): the
// router (GEMV over the normed hidden state, softmax, top-k on the device:
// graph-capturable, no host read) and the expert MLP at decode, reading only
// the selected experts' weights. Each row is computed alone, so a row's
// result never depends on the rows beside it or on the experts they chose.
//
// One arithmetic order, the cpu twin's (kernels-src/cpu/moe.cpp,
// moe_order.h): lane l of a warp sums the 8-element groups l, l + 32, ...
// of a dot product with fmaf (elements in order within a group), then the
// xor butterfly (16, 8, 4, 2, 1); the expert sum adds the top_k weighted
// dots in selection order with fmaf.
//
// Launches (block [128, 1, 1], one warp per output column or router logit):
//   router  grid [rows, 1, 1]                   bytes: 2 X k (router) + 2 rows k + 8 rows top_k
//   gate_up grid [ceil(n / 4), top_k, rows]     bytes: 4 n k per selected expert (gate + up rows)
//   down    grid [ceil(n / 4), rows, 1]         bytes: 2 n k per selected expert + 4 rows n (residual)
#include "kern_cuda_common.cuh"

using namespace kern_cuda;

namespace kern_moe {

constexpr int kLanes = 32;
constexpr int kMaxExperts = 1024;  // the router's logits in shared memory (4 KB)

/// The lane-order dot of a and w (k elements), the same in every lane of the
/// warp: lane l takes the 8-element groups l, l + 32, ... (one 16-byte load
/// of each row where k % 8 == 0 and both rows are 16-byte aligned; else the
/// same elements in the same order one at a time).
__device__ __forceinline__ float lane_dot(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ w,
                                          int k, int lane) {
  float s = 0.0f;
  if ((k & 7) == 0 && aligned_to(a, 16) && aligned_to(w, 16)) {
    for (int g = lane; g < (k >> 3); g += kLanes) {
      float av[8], wv[8];
      load8(a + 8 * g, av);
      load8_ro(w + 8 * g, wv);
#pragma unroll
      for (int e = 0; e < 8; ++e) s = fmaf(av[e], wv[e], s);
    }
  } else {
    for (int i = 8 * lane; i < k; i += 8 * kLanes)
      for (int e = i; e < i + 8 && e < k; ++e) s = fmaf(bf16_to_f32(a[e]), bf16_to_f32(w[e]), s);
  }
#pragma unroll
  for (int o = kLanes / 2; o >= 1; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

/// moe_order.h's route_row: softmax, top-k (ties to the lower index), renormalisation.
__device__ void route_row(const float* logits, int experts, int top_k, bool normalize, float* weights, int* ids) {
  float m = logits[0];
  for (int e = 1; e < experts; ++e) m = logits[e] > m ? logits[e] : m;
  float sum = 0.0f;
  for (int e = 0; e < experts; ++e) sum += expf(logits[e] - m);
  for (int j = 0; j < top_k; ++j) {
    int best = -1;
    float best_p = 0.0f;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int i = 0; i < j; ++i) taken = taken || ids[i] == e;
      if (taken) continue;
      const float p = expf(logits[e] - m) / sum;
      if (best < 0 || p > best_p) best = e, best_p = p;
    }
    ids[j] = best;
    weights[j] = best_p;
  }
  if (!normalize) return;
  float total = 0.0f;
  for (int j = 0; j < top_k; ++j) total += weights[j];
  for (int j = 0; j < top_k; ++j) weights[j] = weights[j] / total;
}

}  // namespace kern_moe

using namespace kern_moe;

/// kern_moe_router_bf16(in bf16 x[rows, k], in bf16 w[experts, k], out f32 topk_weights[rows, top_k],
///                      out i32 topk_ids[rows, top_k], i32 rows, i32 experts, i32 k, i32 top_k, u8 norm_topk_prob)
extern "C" __global__ void __launch_bounds__(128) kern_moe_router_bf16(
    const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w, float* __restrict__ topk_weights,
    int* __restrict__ topk_ids, int rows, int experts, int k, int top_k, uint8_t norm_topk_prob) {
  __shared__ float logits[kMaxExperts];
  const int r = blockIdx.x;
  if (r >= rows || experts < 1 || experts > kMaxExperts || top_k < 1 || top_k > experts || k < 1) return;
  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes, warps = blockDim.x / kLanes;
  const __nv_bfloat16* xr = x + static_cast<int64_t>(r) * k;
  for (int e = warp; e < experts; e += warps) {
    const float d = lane_dot(xr, w + static_cast<int64_t>(e) * k, k, lane);
    if (lane == 0) logits[e] = d;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  route_row(logits, experts, top_k, norm_topk_prob == 1, topk_weights + static_cast<int64_t>(r) * top_k,
            topk_ids + static_cast<int64_t>(r) * top_k);
}

/// kern_moe_gate_up_bf16(in bf16 x[rows, k], in bf16 w[experts, 2n, k], in i32 topk_ids[rows, top_k],
///                       out bf16 act[rows, top_k, n], i32 rows, i32 experts, i32 n, i32 k, i32 top_k)
/// act = bf16(silu(g) * u), g and u the f32 dots with the selected expert's gate row c and up row n + c.
extern "C" __global__ void __launch_bounds__(128) kern_moe_gate_up_bf16(
    const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w, const int* __restrict__ topk_ids,
    __nv_bfloat16* __restrict__ act, int rows, int experts, int n, int k, int top_k) {
  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int c = blockIdx.x * (blockDim.x / kLanes) + warp, j = blockIdx.y, r = blockIdx.z;
  if (r >= rows || j >= top_k || c >= n || k < 0) return;  // whole warps leave together
  const int e = topk_ids[static_cast<int64_t>(r) * top_k + j];
  __nv_bfloat16* out = act + (static_cast<int64_t>(r) * top_k + j) * n + c;
  if (e < 0 || e >= experts) {  // no such expert: a zero row, nothing read
    if (lane == 0) *out = f32_to_bf16(0.0f);
    return;
  }
  const __nv_bfloat16* we = w + static_cast<int64_t>(e) * 2 * n * k;
  const __nv_bfloat16* a = x + static_cast<int64_t>(r) * k;
  const float g = lane_dot(a, we + static_cast<int64_t>(c) * k, k, lane);
  const float u = lane_dot(a, we + static_cast<int64_t>(n + c) * k, k, lane);
  if (lane == 0) *out = f32_to_bf16(g / (1.0f + expf(-g)) * u);
}

/// kern_moe_down_bf16(in bf16 act[rows, top_k, k], in bf16 w[experts, n, k], in i32 topk_ids[rows, top_k],
///                    in f32 topk_weights[rows, top_k], inout bf16 residual[rows, n], i32 rows, i32 experts,
///                    i32 n, i32 k, i32 top_k)
/// residual = bf16(residual + sum_j weight_j * (act_j . down_e_j[c])), j in selection order.
extern "C" __global__ void __launch_bounds__(128) kern_moe_down_bf16(
    const __nv_bfloat16* __restrict__ act, const __nv_bfloat16* __restrict__ w, const int* __restrict__ topk_ids,
    const float* __restrict__ topk_weights, __nv_bfloat16* __restrict__ residual, int rows, int experts, int n, int k,
    int top_k) {
  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int c = blockIdx.x * (blockDim.x / kLanes) + warp, r = blockIdx.y;
  if (r >= rows || c >= n || k < 0 || top_k < 1) return;
  float acc = 0.0f;
  for (int j = 0; j < top_k; ++j) {
    const int64_t at = static_cast<int64_t>(r) * top_k + j;
    const int e = topk_ids[at];
    if (e < 0 || e >= experts) continue;
    const float d = lane_dot(act + at * k, w + (static_cast<int64_t>(e) * n + c) * k, k, lane);
    acc = fmaf(topk_weights[at], d, acc);
  }
  if (lane == 0) {
    __nv_bfloat16* out = residual + static_cast<int64_t>(r) * n + c;
    *out = f32_to_bf16(bf16_to_f32(*out) + acc);
  }
}
