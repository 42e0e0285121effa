// Random sampling of the next token per row (docs/kernels.md §15):
// temperature, min_p, top_k, top_p and a counter-based generator keyed by
// (seed, position), one block per row. Every step is integer counting or an
// f32 sum in a fixed order (no float atomics), so a row's id depends only on
// its own logits and parameters: the same alone or in any batch, and the
// cpu twin (kernels-src/cpu/sample.cpp, kernels-src/cpu/sample_order.h)
// replays the same operations.
//
// The row's logits are counted into a histogram over their 65536 bf16 keys
// (an integer atomicAdd per id); the mass of a key is count x
// expf((v - vmax) / t), so the distribution's cumulative sum over keys from
// the top is exact up to f32 rounding in this order: thread j sums its
// keys [256 j, 256 j + 256) from the top sequentially, thread 0 adds the 256
// chunk sums sequentially. The histogram lives in a state that is zero
// before every launch: the block resets the keys it counted before it ends.
#include <Random123/philox.h>
#include <math_constants.h>

#include <climits>

#include "kern_cuda_common.cuh"

using namespace kern_cuda;

// A named namespace (see argmax.cu: __shared__ names must not depend on the path).
namespace kern_sample {

constexpr int kKeys = 65536;
constexpr int kThreads = 256;
constexpr int kKeysPerThread = kKeys / kThreads;

/// Order-preserving key of bf16 bits (-0 as +0); -1 for NaN.
__device__ __forceinline__ int key_of(unsigned bits) {
  if ((bits & 0x7fffu) > 0x7f80u) return -1;
  if (bits == 0x8000u) bits = 0;
  return (bits & 0x8000u) ? static_cast<int>(~bits & 0xffffu) : static_cast<int>(bits | 0x8000u);
}

__device__ __forceinline__ float value_of(int key) {
  const unsigned k = static_cast<unsigned>(key);
  const unsigned bits = (k & 0x8000u) ? (k & 0x7fffu) : (~k & 0xffffu);
  return __uint_as_float(bits << 16);
}

/// count x expf((v - vmax) / t), or 0 when top_k or min_p cuts the key.
__device__ __forceinline__ float key_mass(int count, float v, float vmax, float t, bool kept_by_top_k, float mp) {
  if (count == 0 || !kept_by_top_k) return 0.0f;
  const float w = expf((v - vmax) / t);
  if (mp > 0.0f && !(w >= mp)) return 0.0f;
  return __fmul_rn(static_cast<float>(count), w);  // never fused into the sum that follows
}

__device__ __forceinline__ int warp_max(int v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace kern_sample

using namespace kern_sample;

/// kern_sample_bf16(in bf16 logits [rows, V], inout i64 next_token [rows],
///                  in f32 temperature [rows], in i32 top_k [rows], in f32 top_p [rows],
///                  in f32 min_p [rows], in i64 seed [rows], in i64 positions [rows],
///                  inout ptr histogram (i32 [max_rows, 65536], zero), i32 rows, i32 vocab, i32 max_rows)
/// Launch: grid [rows, 1, 1], block [256, 1, 1]. A row whose temperature is
/// not > 0 returns at once (greedy: next_token keeps the argmax). Rows at or
/// past max_rows do nothing (the twin refuses them).
/// Bytes moved per sampled row: 2 V twice (count, find the id) from L2, the
/// histogram's touched keys read and reset, 65536 keys read up to 3 times.
extern "C" __global__ void __launch_bounds__(256) kern_sample_bf16(
    const __nv_bfloat16* __restrict__ logits, int64_t* __restrict__ next_token, const float* __restrict__ temperature,
    const int* __restrict__ top_k, const float* __restrict__ top_p, const float* __restrict__ min_p,
    const int64_t* __restrict__ seed, const int64_t* __restrict__ positions, int* __restrict__ histogram, int rows,
    int vocab, int max_rows) {
  const int r = blockIdx.x;
  if (r >= rows || r >= max_rows) return;
  const float t = temperature[r];
  if (!(t > 0.0f)) return;  // greedy row
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned short* row = reinterpret_cast<const unsigned short*>(logits) + static_cast<int64_t>(r) * vocab;
  int* hist = histogram + static_cast<int64_t>(r) * kKeys;

  __shared__ int s_max[kThreads / 32];
  __shared__ int s_cnt[kThreads + 1];    // chunk counts, then their offsets
  __shared__ float s_off[kThreads + 1];  // chunk mass sums, then their offsets
  __shared__ int s_pick[4];              // k_cut, k_p, chosen, the id
  __shared__ float s_kept;

  // 1. Histogram of the row's keys (integer atomics: the counts do not depend on the order).
  int kmax = -1;
  for (int i = tid; i < vocab; i += kThreads) {
    const int k = key_of(row[i]);
    if (k < 0) continue;
    atomicAdd(hist + k, 1);
    kmax = max(kmax, k);
  }
  kmax = warp_max(kmax);
  if (lane == 0) s_max[warp] = kmax;
  __syncthreads();
  kmax = -1;
  for (int w = 0; w < kThreads / 32; ++w) kmax = max(kmax, s_max[w]);
  const float vmax = kmax >= 0 ? value_of(kmax) : 0.0f;
  const bool sample = kmax >= 0 && vmax != CUDART_INF_F && vmax != -CUDART_INF_F;  // never NaN
  const int first = tid * kKeysPerThread;  // this thread's keys: key_at(first .. first + 255)

  if (sample) {
    // 2. top_k: the key where the count from the top reaches k.
    const int k = top_k[r];
    const bool use_k = k > 0 && k < vocab;
    if (use_k) {
      int c = 0;
      for (int q = 0; q < kKeysPerThread; ++q) c += hist[kKeys - 1 - (first + q)];
      s_cnt[tid + 1] = c;
    }
    if (tid == 0) s_pick[0] = 0;
    __syncthreads();
    if (use_k) {
      if (tid == 0) {
        s_cnt[0] = 0;
        for (int j = 0; j < kThreads; ++j) s_cnt[j + 1] += s_cnt[j];
      }
      __syncthreads();
      if (s_cnt[tid] < k && k <= s_cnt[tid + 1]) {
        int seen = s_cnt[tid];
        for (int q = 0; q < kKeysPerThread; ++q) {
          const int key = kKeys - 1 - (first + q);
          seen += hist[key];
          if (seen >= k) {
            s_pick[0] = key;
            break;
          }
        }
      }
      __syncthreads();
    }
    const int k_cut = s_pick[0];
    const float mp_in = min_p[r];
    const float mp = mp_in > 0.0f ? (mp_in < 1.0f ? mp_in : 1.0f) : 0.0f;

    // 3. Chunk mass sums and their offsets, in the twin's order.
    float s = 0.0f;
    for (int q = 0; q < kKeysPerThread; ++q) {
      const int key = kKeys - 1 - (first + q);
      s += key_mass(hist[key], value_of(key), vmax, t, key >= k_cut, mp);
    }
    s_off[tid + 1] = s;
    __syncthreads();
    if (tid == 0) {
      s_off[0] = 0.0f;
      for (int j = 0; j < kThreads; ++j) s_off[j + 1] = s_off[j] + s_off[j + 1];
      s_pick[1] = -1;
      s_pick[2] = -1;
    }
    __syncthreads();

    // 4. top_p: the first key whose cumulative mass reaches the target.
    const float total = s_off[kThreads];
    const float tp = top_p[r];
    float x_p = total;
    if (tp < 1.0f) {
      x_p = tp * total;
      x_p = x_p > 1.0f ? x_p : 1.0f;
    }
    if (s_off[tid + 1] >= x_p && (tid == 0 || !(s_off[tid] >= x_p))) {
      float c = 0.0f;
      for (int q = 0; q < kKeysPerThread; ++q) {
        const int key = kKeys - 1 - (first + q);
        const float m = key_mass(hist[key], value_of(key), vmax, t, key >= k_cut, mp);
        c += m;
        if (m > 0.0f && s_off[tid] + c >= x_p) {
          s_pick[1] = key;
          s_kept = s_off[tid] + c;
          break;
        }
      }
    }
    __syncthreads();

    // 5. The draw: the first key whose cumulative mass exceeds u x kept.
    const int k_p = s_pick[1];
    if (k_p >= 0) {
      const uint64_t p = static_cast<uint64_t>(positions[r]);
      const uint64_t sd = static_cast<uint64_t>(seed[r]);
      r123::Philox4x32 gen;
      const r123::Philox4x32::ctr_type ctr = {{static_cast<uint32_t>(p), static_cast<uint32_t>(p >> 32), 0u, 0u}};
      const r123::Philox4x32::key_type gkey = {{static_cast<uint32_t>(sd), static_cast<uint32_t>(sd >> 32)}};
      const r123::Philox4x32::ctr_type rnd = gen(ctr, gkey);
      const float u = static_cast<float>(rnd[0] >> 8) * 0x1p-24f;
      const float target = u * s_kept;
      if (s_off[tid + 1] > target && (tid == 0 || !(s_off[tid] > target))) {
        float c = 0.0f;
        for (int q = 0; q < kKeysPerThread; ++q) {
          const int key = kKeys - 1 - (first + q);
          const float m = key_mass(hist[key], value_of(key), vmax, t, key >= k_cut, mp);
          c += m;
          if (m > 0.0f && s_off[tid] + c > target) {
            s_pick[2] = key;
            break;
          }
        }
      }
      __syncthreads();
      int chosen = s_pick[2];
      if (chosen < k_p) chosen = k_p;  // none found, or past the cut: the cut key
      const uint64_t pick = (static_cast<uint64_t>(rnd[1]) << 32) | rnd[2];
      const int nth = static_cast<int>(pick % static_cast<uint64_t>(hist[chosen]));

      // 6. The nth id (in index order) with the chosen key: per-thread ranges, counted, then offset.
      const int len = (vocab + kThreads - 1) / kThreads;
      const int lo = min(tid * len, vocab), hi = min(lo + len, vocab);
      int c = 0;
      for (int i = lo; i < hi; ++i) c += key_of(row[i]) == chosen;
      __syncthreads();  // s_cnt's top_k use is over
      s_cnt[tid + 1] = c;
      __syncthreads();
      if (tid == 0) {
        s_cnt[0] = 0;
        for (int j = 0; j < kThreads; ++j) s_cnt[j + 1] += s_cnt[j];
      }
      __syncthreads();
      if (s_cnt[tid] <= nth && nth < s_cnt[tid + 1]) {
        int seen = s_cnt[tid];
        for (int i = lo; i < hi; ++i) {
          if (key_of(row[i]) != chosen) continue;
          if (seen++ == nth) {
            next_token[r] = i;
            break;
          }
        }
      }
    }
  }
  // 7. Leave the histogram zero for the next launch (the keys this thread scanned).
  __syncthreads();
  for (int q = 0; q < kKeysPerThread; ++q) {
    const int key = kKeys - 1 - (first + q);
    if (hist[key] != 0) hist[key] = 0;
  }
}
