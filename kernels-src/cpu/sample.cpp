// Random sampling of the next token per row (docs/kernels.md §17), the cpu
// twin of kernels-src/cuda/sample.cu. It replays the CUDA kernel's
// arithmetic in the same order (the 65536-key histogram, the per-thread key
// chunks and the sequential chunk offsets below), so both pick the same id
// from the same random numbers wherever expf agrees.
//
// Per row r with temperature t = temperature[r] > 0 (any other row — 0,
// negative, NaN — is greedy and left as next_token holds it: the argmax):
// - every non-NaN logit gets its order-preserving 16-bit key (bf16 bits,
//   -0 as +0); the row's histogram counts ids per key;
// - the weight of key k is w(k) = expf((v(k) - vmax) / t) (vmax = the
//   largest logit; p(id) = w / Z);
// - min_p (clamped to [0, 1]; 0 off) keeps keys with w >= min_p; top_k
//   (<= 0 or >= vocab off) keeps keys at or above the key where the count
//   from the top reaches k (ids tied with the k-th are kept); top_p (< 1 on)
//   then keeps the keys down to the first whose cumulative mass reaches
//   top_p x their total (ties kept);
// - u in [0, 1) from Philox4x32-10 (Random123) keyed by seed[r], counter
//   (positions[r], 0): the first key whose cumulative mass exceeds u x the
//   kept mass, then one of its ids by a second random number.
// A row whose largest logit is not finite (all NaN, all -inf, a +inf) stays greedy.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/sample_order.h"

namespace kern::cpu {

namespace {

constexpr const char* kName = "kern_sample_bf16";

using namespace sample_order;

/// One row's sampling over its histogram `hist` (the row's counts are added
/// to it; the caller resets them): the chosen id, -1 to keep the greedy id,
/// or -2 when a key the row counts was not zero on entry. `keys` receives
/// the counted keys, from the top.
///
/// The kernel scans all 65536 keys; a key without ids has mass 0 and adds
/// exactly 0.0f to every sum, so visiting only the counted keys (in the same
/// descending order, grouped by the kernel's per-thread chunks) gives the
/// same bits.
int64_t sample_row(const uint16_t* row, int64_t vocab, float t, int32_t top_k, float top_p, float min_p,
                   uint64_t seed, int64_t position, int32_t* hist, std::vector<int32_t>& keys) {
  keys.clear();
  for (int64_t i = 0; i < vocab; ++i) {
    const int32_t k = key_of(row[i]);
    if (k >= 0 && hist[k] != 0) return -2;  // a stale count (checked before this row counts anything)
  }
  for (int64_t i = 0; i < vocab; ++i) {
    const int32_t k = key_of(row[i]);
    if (k < 0) continue;
    if (hist[k]++ == 0) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end(), std::greater<>());
  if (keys.empty()) return -1;
  const float vmax = value_of(keys.front());
  if (!std::isfinite(vmax)) return -1;

  // top_k: the key where the count from the top reaches k (integer sums: any order gives the same).
  int32_t k_cut = 0;
  if (top_k > 0 && top_k < vocab) {
    int64_t seen = 0;
    for (int32_t k : keys) {
      seen += hist[k];
      if (seen >= top_k) {
        k_cut = k;
        break;
      }
    }
  }
  const float mp = clamp_min_p(min_p);
  const size_t n = keys.size();
  std::vector<float> mass(n);
  for (size_t i = 0; i < n; ++i) mass[i] = key_mass(hist[keys[i]], value_of(keys[i]), vmax, t, keys[i] >= k_cut, mp);
  auto chunk_of = [](int32_t k) { return (kKeys - 1 - k) / kKeysPerThread; };  // the kernel thread that scans k

  // Chunk sums and their sequential offsets (the kernel's thread 0 loop);
  // first[j] = the index in `keys` of chunk j's first counted key.
  float offset[kThreads + 1];
  size_t first[kThreads + 1];
  offset[0] = 0.0f;
  size_t i = 0;
  for (int j = 0; j < kThreads; ++j) {
    first[j] = i;
    float s = 0.0f;
    for (; i < n && chunk_of(keys[i]) == j; ++i) s += mass[i];
    offset[j + 1] = offset[j] + s;
  }
  first[kThreads] = n;
  // The first key (from the top) with mass > 0 whose cumulative mass C
  // satisfies pred(C); C = offset[chunk] + the chunk's running sum.
  auto first_key = [&](auto pred, float& c_out) -> int32_t {
    for (int j = 0; j < kThreads; ++j) {
      if (!pred(offset[j + 1])) continue;  // the first chunk whose end satisfies it
      float s = 0.0f;
      for (size_t q = first[j]; q < first[j + 1]; ++q) {
        s += mass[q];
        const float c = offset[j] + s;
        if (mass[q] > 0.0f && pred(c)) {
          c_out = c;
          return keys[q];
        }
      }
      return -1;  // unreachable: the chunk's end satisfies pred
    }
    return -1;
  };
  const float total = offset[kThreads];
  const float x_p = top_p_target(top_p, total);
  float kept = 0.0f;
  const int32_t k_p = first_key([&](float c) { return c >= x_p; }, kept);
  if (k_p < 0) return -1;  // unreachable: C reaches the total at its last key

  const Draw d = draw(seed, position);
  const float target = d.u * kept;
  float unused = 0.0f;
  int32_t chosen = first_key([&](float c) { return c > target; }, unused);
  if (chosen < k_p) chosen = k_p;  // none (u x kept rounded to kept) or past the cut: the cut key
  const uint32_t nth = static_cast<uint32_t>(d.pick % static_cast<uint64_t>(hist[chosen]));
  uint32_t seen = 0;
  for (int64_t id = 0; id < vocab; ++id) {
    if (key_of(row[id]) != chosen) continue;
    if (seen++ == nth) return id;
  }
  return -1;  // unreachable: hist[chosen] ids have the key
}

}  // namespace

Status sample_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 12));
  int64_t rows = 0, vocab = 0, max_rows = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 9, "rows", 0, rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 10, "vocab", 0, vocab));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 11, "max_rows", 0, max_rows));
  if (rows > max_rows)
    return launch_error(kName, "param 9 (rows) is " + std::to_string(rows) + "; the histogram scratch holds " +
                                   std::to_string(max_rows) + " rows (param 11, max_rows)");
  const bool work = rows > 0;
  const uint16_t* logits = nullptr;
  int64_t* next = nullptr;
  const float *temperature = nullptr, *top_p = nullptr, *min_p = nullptr;
  const int32_t* top_k = nullptr;
  const int64_t *seed = nullptr, *positions = nullptr;
  int32_t* hist = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "logits", work && vocab > 0, logits));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "next_token", work, next));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 2, "temperature", work, temperature));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 3, "top_k", work, top_k));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 4, "top_p", work, top_p));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 5, "min_p", work, min_p));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 6, "seed", work, seed));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 7, "positions", work, positions));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 8, "histogram", work, hist));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, rows, "one block per row"));
  if (work && l.block[0] != kThreads)
    return launch_error(kName, "block.x is " + std::to_string(l.block[0]) + "; the kernel's scan order needs " +
                                   std::to_string(kThreads));

  std::vector<int32_t> keys;
  for (int64_t r = 0; r < rows; ++r) {
    const float t = temperature[r];
    if (!(t > 0.0f)) continue;  // greedy: the argmax's id stays
    int32_t* h = hist + r * kKeys;
    // The state is zero between launches (the CUDA kernel counts into it
    // with atomics and resets what it counted). The twin checks the keys it
    // counts (a full 256 KB scan per row would dominate its cost).
    const int64_t id = sample_row(logits + r * vocab, vocab, t, top_k[r], top_p[r], min_p[r],
                                  static_cast<uint64_t>(seed[r]), positions[r], h, keys);
    if (id == -2)
      return data_error(kName, "histogram row " + std::to_string(r) +
                                   " is not zero on entry (param 8 must point at a zeroed state, reset by every "
                                   "launch)");
    for (int32_t k : keys) h[k] = 0;
    if (id >= 0) next[r] = id;
  }
  return Status::ok_status();
}

Status sample_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 9), vocab = size_i32(l, 10), max_rows = size_i32(l, 11);
  if (rows == 0) return Status::ok_status();
  if (vocab > 0) e.touch(0, "logits", sat_product({rows, vocab, 2}));
  e.touch(1, "next_token", sat_mul(rows, 8));
  e.touch(2, "temperature", sat_mul(rows, 4));
  e.touch(3, "top_k", sat_mul(rows, 4));
  e.touch(4, "top_p", sat_mul(rows, 4));
  e.touch(5, "min_p", sat_mul(rows, 4));
  e.touch(6, "seed", sat_mul(rows, 8));
  e.touch(7, "positions", sat_mul(rows, 8));
  // rows > max_rows is refused by the kernel (a clearer message than the extent's).
  e.touch(8, "histogram", sat_product({std::min(rows, max_rows), kKeys, 4}));
  return Status::ok_status();
}

}  // namespace kern::cpu
