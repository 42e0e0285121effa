// The mixture-of-experts kernels (docs/kernels.md §18, Qwen3-MoE): the
// router and the expert MLP at decode, each row computed alone (a row's
// result never depends on the other rows or on the experts they chose).
//
// Every dot product here has one order, the CUDA kernels' (moe.cu): lane l
// of 32 sums the 8-element groups l, l + 32, ... with fused multiply-adds,
// then the lanes are added by the xor butterfly (16, 8, 4, 2, 1); so the
// twin and the emulated CUDA kernel agree bit for bit (-ffp-contract=off:
// the fmas are explicit).
#include <cmath>
#include <vector>

#include "common/bf16.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/moe_order.h"

namespace kern::cpu {

namespace {
constexpr const char* kRouter = "kern_moe_router_bf16";
constexpr const char* kGateUp = "kern_moe_gate_up_bf16";
constexpr const char* kDown = "kern_moe_down_bf16";

/// The lane-order dot product of bf16 rows a and w of k elements (moe.cu's
/// order: lane l takes the 8-element groups l, l + 32, ..., each group's
/// elements in order). A block of 32 groups is widened to f32 first
/// (contiguous: vectorises), then the 32 independent lane chains take one
/// element of their group at a time (the fma clone; the same bits as
/// std::fma).
__attribute__((target_clones("fma", "default"))) float lane_dot(const uint16_t* a, const uint16_t* w, int64_t k) {
  constexpr int64_t kBlock = kMoeGroup * kMoeLanes;
  float lanes[kMoeLanes] = {};
  int64_t i = 0;
  for (; i + kBlock <= k; i += kBlock) {
    float fa[kBlock], fw[kBlock];
    for (int j = 0; j < kBlock; ++j) fa[j] = bf16_to_f32(a[i + j]), fw[j] = bf16_to_f32(w[i + j]);
    for (int e = 0; e < kMoeGroup; ++e)
      for (int l = 0; l < kMoeLanes; ++l)
        lanes[l] = std::fma(fa[kMoeGroup * l + e], fw[kMoeGroup * l + e], lanes[l]);
  }
  for (int64_t j = i; j < k; ++j) {  // the last, partial block: group (j - i) / 8 of it is lane (j - i) / 8
    const int l = static_cast<int>((j - i) / kMoeGroup);
    lanes[l] = std::fma(bf16_to_f32(a[j]), bf16_to_f32(w[j]), lanes[l]);
  }
  return butterfly_sum(lanes);
}

/// Reads and checks the shared scalars rows, experts, top_k (param indices given).
Status read_moe_sizes(const CpuLaunch& l, const char* kernel, size_t i_rows, size_t i_experts, size_t i_top_k,
                      int64_t& rows, int64_t& experts, int64_t& top_k) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(read_i32(l, kernel, i_rows, "rows", 0, rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kernel, i_experts, "experts", 1, experts));
  KERN_RETURN_IF_ERROR(read_i32(l, kernel, i_top_k, "top_k", 1, top_k));
  KERN_RETURN_IF_ERROR(check_at_least(kernel, i_experts, "experts", experts, top_k, "top_k experts per row"));
  return Status::ok_status();
}
}  // namespace

Status moe_router_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kRouter, 9));
  int64_t rows = 0, experts = 0, k = 0, top_k = 0;
  KERN_RETURN_IF_ERROR(read_moe_sizes(l, kRouter, 4, 5, 7, rows, experts, top_k));
  KERN_RETURN_IF_ERROR(read_i32(l, kRouter, 6, "k", 1, k));
  if (experts > kMoeMaxExperts) {
    return launch_error(kRouter, "param 5 (experts) is " + std::to_string(experts) + "; must be <= " +
                                     std::to_string(kMoeMaxExperts) + " (the router's logits in shared memory)");
  }
  const uint8_t flags = l.arg<uint8_t>(8);
  if (flags > 1) return launch_error(kRouter, "param 8 (norm_topk_prob) is " + std::to_string(flags) + "; must be 0 or 1");
  const bool work = rows > 0;
  const uint16_t *x = nullptr, *w = nullptr;
  float* weights = nullptr;
  int32_t* ids = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kRouter, 0, "x", work, x));
  KERN_RETURN_IF_ERROR(read_ptr(l, kRouter, 1, "w", work, w));
  KERN_RETURN_IF_ERROR(read_ptr(l, kRouter, 2, "topk_weights", work, weights));
  KERN_RETURN_IF_ERROR(read_ptr(l, kRouter, 3, "topk_ids", work, ids));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kRouter, 0, rows, "one block per row"));
  if (!work) return Status::ok_status();
  std::vector<float> logits(experts);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t e = 0; e < experts; ++e) logits[e] = lane_dot(x + r * k, w + e * k, k);
    route_row(logits.data(), static_cast<int>(experts), static_cast<int>(top_k), flags == 1, weights + r * top_k,
              ids + r * top_k);
  }
  return Status::ok_status();
}

Status moe_router_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 4), experts = size_i32(l, 5), k = size_i32(l, 6), top_k = size_i32(l, 7);
  if (rows == 0) return Status::ok_status();
  e.touch(0, "x", sat_product({rows, k, 2}));
  e.touch(1, "w", sat_product({experts, k, 2}));
  e.touch(2, "topk_weights", sat_product({rows, top_k, 4}));
  e.touch(3, "topk_ids", sat_product({rows, top_k, 4}));
  return Status::ok_status();
}

Status moe_gate_up_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kGateUp, 9));
  int64_t rows = 0, experts = 0, n = 0, k = 0, top_k = 0;
  KERN_RETURN_IF_ERROR(read_moe_sizes(l, kGateUp, 4, 5, 8, rows, experts, top_k));
  KERN_RETURN_IF_ERROR(read_i32(l, kGateUp, 6, "n", 0, n));
  KERN_RETURN_IF_ERROR(read_i32(l, kGateUp, 7, "k", 0, k));
  const bool work = rows > 0 && n > 0;
  const uint16_t *x = nullptr, *w = nullptr;
  const int32_t* ids = nullptr;
  uint16_t* act = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kGateUp, 0, "x", work, x));
  KERN_RETURN_IF_ERROR(read_ptr(l, kGateUp, 1, "w", work, w));
  KERN_RETURN_IF_ERROR(read_ptr(l, kGateUp, 2, "topk_ids", work, ids));
  KERN_RETURN_IF_ERROR(read_ptr(l, kGateUp, 3, "act", work, act));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kGateUp, 0, (n + kMoeColsPerBlock - 1) / kMoeColsPerBlock,
                                         "one warp per output column, 4 per block"));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kGateUp, 1, top_k, "one block row per selected expert"));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kGateUp, 2, rows, "one block plane per row"));
  if (!work) return Status::ok_status();
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* a = x + r * k;
    for (int64_t j = 0; j < top_k; ++j) {
      const int32_t e = ids[r * top_k + j];
      uint16_t* out = act + (r * top_k + j) * n;
      const bool valid = e >= 0 && e < experts;  // an expert id from no router: zero row, nothing read
      const uint16_t* we = valid ? w + static_cast<int64_t>(e) * 2 * n * k : nullptr;
      for (int64_t c = 0; c < n; ++c) {
        if (!valid) {
          out[c] = 0;
          continue;
        }
        const float g = lane_dot(a, we + c * k, k);
        const float u = lane_dot(a, we + (n + c) * k, k);
        out[c] = f32_to_bf16(g / (1.0f + std::exp(-g)) * u);
      }
    }
  }
  return Status::ok_status();
}

Status moe_gate_up_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 4), experts = size_i32(l, 5), n = size_i32(l, 6), k = size_i32(l, 7),
                 top_k = size_i32(l, 8);
  if (rows == 0 || n == 0) return Status::ok_status();
  e.touch(0, "x", sat_product({rows, k, 2}));
  e.touch(1, "w", sat_product({experts, 2, n, k, 2}));
  e.touch(2, "topk_ids", sat_product({rows, top_k, 4}));
  e.touch(3, "act", sat_product({rows, top_k, n, 2}));
  return Status::ok_status();
}

Status moe_down_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kDown, 10));
  int64_t rows = 0, experts = 0, n = 0, k = 0, top_k = 0;
  KERN_RETURN_IF_ERROR(read_moe_sizes(l, kDown, 5, 6, 9, rows, experts, top_k));
  KERN_RETURN_IF_ERROR(read_i32(l, kDown, 7, "n", 0, n));
  KERN_RETURN_IF_ERROR(read_i32(l, kDown, 8, "k", 0, k));
  const bool work = rows > 0 && n > 0;
  const uint16_t *act = nullptr, *w = nullptr;
  const int32_t* ids = nullptr;
  const float* weights = nullptr;
  uint16_t* residual = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kDown, 0, "act", work, act));
  KERN_RETURN_IF_ERROR(read_ptr(l, kDown, 1, "w", work, w));
  KERN_RETURN_IF_ERROR(read_ptr(l, kDown, 2, "topk_ids", work, ids));
  KERN_RETURN_IF_ERROR(read_ptr(l, kDown, 3, "topk_weights", work, weights));
  KERN_RETURN_IF_ERROR(read_ptr(l, kDown, 4, "residual", work, residual));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kDown, 0, (n + kMoeColsPerBlock - 1) / kMoeColsPerBlock,
                                         "one warp per output column, 4 per block"));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kDown, 1, rows, "one block row per row"));
  if (!work) return Status::ok_status();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      float acc = 0.0f;
      for (int64_t j = 0; j < top_k; ++j) {  // the selection order, fixed: batch invariance
        const int32_t e = ids[r * top_k + j];
        if (e < 0 || e >= experts) continue;
        const float d = lane_dot(act + (r * top_k + j) * k, w + (static_cast<int64_t>(e) * n + c) * k, k);
        acc = std::fma(weights[r * top_k + j], d, acc);
      }
      uint16_t& out = residual[r * n + c];
      out = f32_to_bf16(bf16_to_f32(out) + acc);
    }
  }
  return Status::ok_status();
}

Status moe_down_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 5), experts = size_i32(l, 6), n = size_i32(l, 7), k = size_i32(l, 8),
                 top_k = size_i32(l, 9);
  if (rows == 0 || n == 0) return Status::ok_status();
  e.touch(0, "act", sat_product({rows, top_k, k, 2}));
  e.touch(1, "w", sat_product({experts, n, k, 2}));
  e.touch(2, "topk_ids", sat_product({rows, top_k, 4}));
  e.touch(3, "topk_weights", sat_product({rows, top_k, 4}));
  e.touch(4, "residual", sat_product({rows, n, 2}));
  return Status::ok_status();
}

}  // namespace kern::cpu
