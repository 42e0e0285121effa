// The split-K GEMM built-ins of tensor parallelism (docs/parallel.md):
//   extern:gemm_bf16_tn_splitk      c[m, n] = bf16(S)
//   extern:gemm_bf16_tn_splitk_f32  c[m, n] = S (f32)
// where S is the sum over `splits` equal k slices of the slice dots, added as
// a pairwise tree (tree_sum_f32). A slice dot uses gemm_bf16_tn's order
// (eight lanes, lane x takes elements x, x + 8, ...; lanes added pairwise;
// the tail in order), with no FMA contraction (-ffp-contract=off). Why this
// shape: a row-split projection at TP = N gives rank r the k slices
// [r * splits / N, (r + 1) * splits / N): each rank's tree over its own
// slices is a subtree of TP = 1's tree, and the all-reduce adds the ranks'
// subtrees in the same tree (rank order), so TP = N reproduces TP = 1's bits.
#include <algorithm>
#include <new>
#include <vector>

#include "common/bf16.h"
#include "common/extern_ops.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/parallel.h"

namespace kern::cpu {

namespace {

constexpr const char* kSplitK = extern_op_symbol(ExternOpId::kGemmBf16TnSplitK).data();
constexpr const char* kSplitKF32 = extern_op_symbol(ExternOpId::kGemmBf16TnSplitKF32).data();
constexpr int kLanes = 8;
constexpr int64_t kMaxSplits = 64;

/// a . w over `len` elements (a widened, w bf16) in gemm_bf16_tn's order.
float slice_dot(const float* a, const uint16_t* w, int64_t len) {
  float acc[kLanes] = {};
  const int64_t body = len - len % kLanes;
  for (int64_t x = 0; x < body; x += kLanes)
    for (int lane = 0; lane < kLanes; ++lane) acc[lane] += a[x + lane] * bf16_to_f32(w[x + lane]);
  float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (int64_t x = body; x < len; ++x) sum += a[x] * bf16_to_f32(w[x]);
  return sum;
}

Status run_splitk(const CpuLaunch& l, const char* kname, bool f32_out) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kname, 7));
  int64_t m = 0, n = 0, k = 0, splits = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kname, 3, "m", 0, m));
  KERN_RETURN_IF_ERROR(read_i32(l, kname, 4, "n", 0, n));
  KERN_RETURN_IF_ERROR(read_i32(l, kname, 5, "k", 0, k));
  KERN_RETURN_IF_ERROR(read_i32(l, kname, 6, "splits", 1, splits));
  if (splits > kMaxSplits || (splits & (splits - 1)) != 0)
    return launch_error(kname, "param 6 (splits) is " + std::to_string(splits) +
                                   "; must be a power of two <= " + std::to_string(kMaxSplits));
  if (k % splits != 0)
    return launch_error(kname, "param 5 (k) is " + std::to_string(k) + "; must be a multiple of splits " +
                                   std::to_string(splits) + " (equal k slices)");
  const bool out = m > 0 && n > 0;
  const uint16_t* a = nullptr;
  const uint16_t* w = nullptr;
  void* c = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 0, "a", out && k > 0, a));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 1, "w", out && k > 0, w));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 2, "c", out, c));
  if (!out) return Status::ok_status();
  const int64_t len = k / splits;
  try {
    std::vector<float> a_f32(static_cast<size_t>(m * k));
    if (k > 0) bf16_to_f32_n(a, a_f32.data(), a_f32.size());
    const unsigned threads = cpu_threads(m * n * k, n);
    run_ranges(n, threads, [&](unsigned, int64_t jb, int64_t je) {
      float sums[kMaxSplits];
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = jb; j < je; ++j) {
          for (int64_t s = 0; s < splits; ++s)
            sums[s] = slice_dot(a_f32.data() + i * k + s * len, w + j * k + s * len, len);
          const float v = tree_sum_f32(sums, static_cast<size_t>(splits), 1);
          if (f32_out) {
            static_cast<float*>(c)[i * n + j] = v;
          } else {
            static_cast<uint16_t*>(c)[i * n + j] = f32_to_bf16(v);
          }
        }
    });
  } catch (const std::bad_alloc&) {
    return make_error(ErrorKind::kDevice, std::string(kname) + ": out of host memory for m " + std::to_string(m) +
                                              ", k " + std::to_string(k));
  }
  return Status::ok_status();
}

Status splitk_extents(const CpuLaunch& l, CpuExtents& e, uint64_t c_elem_bytes) {
  using namespace detail;
  const uint64_t m = size_i32(l, 3), n = size_i32(l, 4), k = size_i32(l, 5);
  if (m == 0 || n == 0) return Status::ok_status();
  if (k > 0) {
    e.touch(0, "a", sat_product({m, k, 2}));
    e.touch(1, "w", sat_product({n, k, 2}));
  }
  e.touch(2, "c", sat_product({m, n, c_elem_bytes}));
  return Status::ok_status();
}

}  // namespace

float tree_sum_f32(const float* v, size_t count, size_t stride) {
  if (count == 0) return 0.0f;
  if (count == 1) return v[0];
  const size_t left = (count + 1) / 2;
  return tree_sum_f32(v, left, stride) + tree_sum_f32(v + left * stride, count - left, stride);
}

Status gemm_bf16_tn_splitk(const CpuLaunch& l) { return run_splitk(l, kSplitK, false); }
Status gemm_bf16_tn_splitk_f32(const CpuLaunch& l) { return run_splitk(l, kSplitKF32, true); }
Status gemm_bf16_tn_splitk_extents(const CpuLaunch& l, CpuExtents& e) { return splitk_extents(l, e, 2); }
Status gemm_bf16_tn_splitk_f32_extents(const CpuLaunch& l, CpuExtents& e) { return splitk_extents(l, e, 4); }

}  // namespace kern::cpu
