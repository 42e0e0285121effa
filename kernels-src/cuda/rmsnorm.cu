// RMS normalisation family (docs/kernels.md §2-4): rmsnorm, add_rmsnorm
// (vLLM's fused_add_rms_norm) and head_rmsnorm (Qwen3's per-head q/k norm).
// y = bf16(x * (1 / sqrt(mean(x^2) + eps)) * w), f32 math, one RNE rounding
// on each store; add_rmsnorm first rounds r = bf16(residual + x), stores it to
// residual and normalises the rounded r.
//
// The row is read from global memory once: each thread keeps its slice in
// registers (up to kRowVecsPerThread 16-byte vectors, i.e. n <= 8192 at 256
// threads); only longer rows are re-read (from L1/L2) in the second pass.
#include "kern_cuda_common.cuh"

using namespace kern_cuda;

namespace {

constexpr int kRowVecsPerThread = 4;

/// Loads 8 elements of the row at vector `v`, applying the residual add
/// (and storing the rounded sum) when kAdd.
template <bool kAdd>
__device__ __forceinline__ void load_row_vec(const __nv_bfloat16* x, __nv_bfloat16* residual, int v,
                                             float r[8]) {
  load8(x + 8 * v, r);
  if constexpr (kAdd) {
    float s[8];
    load8(residual + 8 * v, s);
#pragma unroll
    for (int j = 0; j < 8; ++j) s[j] += r[j];
    const uint4 rounded = pack8(s);
    *reinterpret_cast<uint4*>(residual + 8 * v) = rounded;
    unpack8(rounded, r);  // normalise the rounded sum, as the reference does
  }
}

/// y[kN v, kN v + kN) = bf16(r * inv * w[same]) (f32 math): kN = 8 with
/// 16-byte accesses (w through the read-only path) for rows, kN = 4 with
/// 8-byte accesses for heads. Pointers aligned to 2 kN bytes; callers check.
template <int kN>
__device__ __forceinline__ void store_norm_vec(__nv_bfloat16* y, const __nv_bfloat16* w, int v, const float r[kN],
                                               float inv) {
  static_assert(kN == 8 || kN == 4);
  float wf[kN], o[kN];
  if constexpr (kN == 8) {
    load8_ro(w + 8 * v, wf);
  } else {
    load4(w + 4 * v, wf);
  }
#pragma unroll
  for (int j = 0; j < kN; ++j) o[j] = r[j] * inv * wf[j];
  if constexpr (kN == 8) {
    store8(y + 8 * v, o);
  } else {
    store4(y + 4 * v, o);
  }
}

/// One row normalised by one block. Vector path when n % 8 == 0 and every
/// pointer is 16-byte aligned; scalar path otherwise.
template <bool kAdd>
__device__ void norm_row(const __nv_bfloat16* x, __nv_bfloat16* residual, const __nv_bfloat16* w,
                         __nv_bfloat16* y, int n, float eps) {
  const int tid = threadIdx.x;
  const int nthreads = blockDim.x;
  float sumsq = 0.0f;
  const bool vec = (n & 7) == 0 && aligned_to(x, 16) && aligned_to(w, 16) && aligned_to(y, 16) &&
                   (!kAdd || aligned_to(residual, 16));
  if (vec) {
    const int nvec = n >> 3;
    const __nv_bfloat16* xv = x;
    __nv_bfloat16* rv = residual;
    const __nv_bfloat16* wv = w;
    __nv_bfloat16* yv = y;
    float cache[kRowVecsPerThread][8];
#pragma unroll
    for (int k = 0; k < kRowVecsPerThread; ++k) {
      const int v = tid + k * nthreads;
      if (v < nvec) {
        load_row_vec<kAdd>(xv, rv, v, cache[k]);
#pragma unroll
        for (int j = 0; j < 8; ++j) sumsq += cache[k][j] * cache[k][j];
      }
    }
    for (int v = tid + kRowVecsPerThread * nthreads; v < nvec; v += nthreads) {
      float r[8];
      load_row_vec<kAdd>(xv, rv, v, r);
#pragma unroll
      for (int j = 0; j < 8; ++j) sumsq += r[j] * r[j];
    }
    const float inv = 1.0f / sqrtf(block_sum(sumsq) / static_cast<float>(n) + eps);
#pragma unroll
    for (int k = 0; k < kRowVecsPerThread; ++k) {
      const int v = tid + k * nthreads;
      if (v < nvec) store_norm_vec<8>(yv, wv, v, cache[k], inv);
    }
    for (int v = tid + kRowVecsPerThread * nthreads; v < nvec; v += nthreads) {
      float r[8];
      load8((kAdd ? rv : xv) + 8 * v, r);  // this thread's own residual store from pass 1
      store_norm_vec<8>(yv, wv, v, r, inv);
    }
    return;
  }
  for (int i = tid; i < n; i += nthreads) {
    float r = bf16_to_f32(x[i]);
    if constexpr (kAdd) {
      const __nv_bfloat16 rounded = f32_to_bf16(bf16_to_f32(residual[i]) + r);
      residual[i] = rounded;
      r = bf16_to_f32(rounded);
    }
    sumsq += r * r;
  }
  const float inv = 1.0f / sqrtf(block_sum(sumsq) / static_cast<float>(n) + eps);
  for (int i = tid; i < n; i += nthreads) {
    const float r = bf16_to_f32(kAdd ? residual[i] : x[i]);
    y[i] = f32_to_bf16(r * inv * bf16_to_f32(w[i]));
  }
}

}  // namespace

/// kern_rmsnorm_bf16(in bf16 x[rows,n], in bf16 weight[n], out bf16 y[rows,n],
///                   i32 rows, i32 n, f32 eps)
/// Launch: grid [rows, 1, 1], block [256, 1, 1]; one block per row.
/// Bytes moved: 2 n (w) + rows * 4 n (x read, y written).
/// y may alias x (in-place): each thread reads its elements before writing them.
extern "C" __global__ void __launch_bounds__(256) kern_rmsnorm_bf16(
    const __nv_bfloat16* x, const __nv_bfloat16* __restrict__ weight, __nv_bfloat16* y, int rows,
    int n, float eps) {
  const int row = blockIdx.x;
  if (row >= rows || n <= 0) return;
  const int64_t base = static_cast<int64_t>(row) * n;
  norm_row<false>(x + base, nullptr, weight, y + base, n, eps);
}

/// kern_add_rmsnorm_bf16(in bf16 x[rows,n], inout bf16 residual[rows,n],
///                       in bf16 weight[n], out bf16 y[rows,n], i32 rows, i32 n, f32 eps)
/// residual = bf16(residual + x); y = rmsnorm(residual).
/// Launch: grid [rows, 1, 1], block [256, 1, 1]; one block per row.
/// Bytes moved: 2 n (w) + rows * 8 n (x, residual read; residual, y written).
extern "C" __global__ void __launch_bounds__(256) kern_add_rmsnorm_bf16(
    const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ residual,
    const __nv_bfloat16* __restrict__ weight, __nv_bfloat16* __restrict__ y, int rows, int n,
    float eps) {
  const int row = blockIdx.x;
  if (row >= rows || n <= 0) return;
  const int64_t base = static_cast<int64_t>(row) * n;
  norm_row<true>(x + base, residual + base, weight, y + base, n, eps);
}

namespace {

constexpr int kHeadChunksPerLane = 4;  // 4 x 4 elements x 32 lanes: head_dim <= 512 cached

}  // namespace

/// kern_head_rmsnorm_bf16(in bf16 x, in bf16 weight[D], out bf16 y, i32 total_heads,
///                        i32 heads_per_token, i32 head_dim, i32 x_stride,
///                        i32 y_stride, f32 eps)
/// Head g = (token g / heads_per_token, head g % heads_per_token) reads
/// x[t*x_stride + h*D ...] and writes y[t*y_stride + h*D ...].
/// Launch: grid [ceil_div(total_heads, 4), 1, 1], block [128, 1, 1]; one warp
/// per head, 8-byte (4 x bf16) accesses (D = 128: one per lane).
/// Bytes moved: 2 D (w) + total_heads * 4 D (x read, y written).
extern "C" __global__ void __launch_bounds__(128) kern_head_rmsnorm_bf16(
    const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
    __nv_bfloat16* __restrict__ y, int total_heads, int heads_per_token, int head_dim,
    int x_stride, int y_stride, float eps) {
  const int lane = threadIdx.x & 31;
  const int g = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (g >= total_heads || head_dim <= 0 || heads_per_token <= 0) return;
  const int t = g / heads_per_token;
  const int h = g - t * heads_per_token;
  const __nv_bfloat16* xh = x + static_cast<int64_t>(t) * x_stride + static_cast<int64_t>(h) * head_dim;
  __nv_bfloat16* yh = y + static_cast<int64_t>(t) * y_stride + static_cast<int64_t>(h) * head_dim;
  float sumsq = 0.0f;
  if ((head_dim & 3) == 0 && aligned_to(xh, 8) && aligned_to(yh, 8) && aligned_to(weight, 8)) {
    const int nchunk = head_dim >> 2;
    const __nv_bfloat16* xv = xh;
    const __nv_bfloat16* wv = weight;
    __nv_bfloat16* yv = yh;
    float cache[kHeadChunksPerLane][4];
#pragma unroll
    for (int k = 0; k < kHeadChunksPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < nchunk) {
        load4(xv + 4 * c, cache[k]);
#pragma unroll
        for (int j = 0; j < 4; ++j) sumsq += cache[k][j] * cache[k][j];
      }
    }
    for (int c = lane + 32 * kHeadChunksPerLane; c < nchunk; c += 32) {
      float r[4];
      load4(xv + 4 * c, r);
#pragma unroll
      for (int j = 0; j < 4; ++j) sumsq += r[j] * r[j];
    }
    const float inv = 1.0f / sqrtf(warp_sum(sumsq) / static_cast<float>(head_dim) + eps);
#pragma unroll
    for (int k = 0; k < kHeadChunksPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < nchunk) store_norm_vec<4>(yv, wv, c, cache[k], inv);
    }
    for (int c = lane + 32 * kHeadChunksPerLane; c < nchunk; c += 32) {
      float r[4];
      load4(xv + 4 * c, r);
      store_norm_vec<4>(yv, wv, c, r, inv);
    }
    return;
  }
  for (int i = lane; i < head_dim; i += 32) {
    const float r = bf16_to_f32(xh[i]);
    sumsq += r * r;
  }
  const float inv = 1.0f / sqrtf(warp_sum(sumsq) / static_cast<float>(head_dim) + eps);
  for (int i = lane; i < head_dim; i += 32)
    yh[i] = f32_to_bf16(bf16_to_f32(xh[i]) * inv * bf16_to_f32(weight[i]));
}
