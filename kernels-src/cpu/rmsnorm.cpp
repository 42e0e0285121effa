// The RMS-norm family (docs/kernels.md §2-4): kern_rmsnorm_bf16,
// kern_add_rmsnorm_bf16 (vLLM's fused_add_rms_norm) and
// kern_head_rmsnorm_bf16 (Qwen3's per-head q/k norm over strided rows).
// One f32 routine normalises a row; the kernels differ only in where the row
// comes from and goes to. Math in f32, one bf16 rounding on each store.
#include <cmath>
#include <vector>

#include "common/bf16.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {

constexpr const char* kRmsnorm = "kern_rmsnorm_bf16";
constexpr const char* kAddRmsnorm = "kern_add_rmsnorm_bf16";
constexpr const char* kHeadRmsnorm = "kern_head_rmsnorm_bf16";

/// y[j] = bf16(x[j] * rsqrt(mean(x^2) + eps) * w[j]) for j in [0, n); x in f32.
void normalize_row(const float* x, const uint16_t* weight, uint16_t* y, int64_t n, float eps) {
  float sum_sq = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum_sq += x[j] * x[j];
  const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
  for (int64_t j = 0; j < n; ++j) y[j] = f32_to_bf16(x[j] * inv_rms * bf16_to_f32(weight[j]));
}

}  // namespace

Status rmsnorm_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kRmsnorm, 6));
  int64_t rows = 0, n = 0;
  float eps = 0.0f;
  KERN_RETURN_IF_ERROR(read_i32(l, kRmsnorm, 3, "rows", 0, rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kRmsnorm, 4, "n", 0, n));
  KERN_RETURN_IF_ERROR(read_f32(l, kRmsnorm, 5, "eps", true, eps));
  const bool work = rows > 0 && n > 0;
  const uint16_t* x = nullptr;
  const uint16_t* weight = nullptr;
  uint16_t* y = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kRmsnorm, 0, "x", work, x));
  KERN_RETURN_IF_ERROR(read_ptr(l, kRmsnorm, 1, "weight", work, weight));
  KERN_RETURN_IF_ERROR(read_ptr(l, kRmsnorm, 2, "y", work, y));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kRmsnorm, 0, rows, "one block per row"));
  if (!work) return Status::ok_status();

  std::vector<float> row(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    bf16_to_f32_n(x + r * n, row.data(), row.size());  // read first: y may alias x
    normalize_row(row.data(), weight, y + r * n, n, eps);
  }
  return Status::ok_status();
}

Status add_rmsnorm_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kAddRmsnorm, 7));
  int64_t rows = 0, n = 0;
  float eps = 0.0f;
  KERN_RETURN_IF_ERROR(read_i32(l, kAddRmsnorm, 4, "rows", 0, rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kAddRmsnorm, 5, "n", 0, n));
  KERN_RETURN_IF_ERROR(read_f32(l, kAddRmsnorm, 6, "eps", true, eps));
  const bool work = rows > 0 && n > 0;
  const uint16_t* x = nullptr;
  uint16_t* residual = nullptr;
  const uint16_t* weight = nullptr;
  uint16_t* y = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kAddRmsnorm, 0, "x", work, x));
  KERN_RETURN_IF_ERROR(read_ptr(l, kAddRmsnorm, 1, "residual", work, residual));
  KERN_RETURN_IF_ERROR(read_ptr(l, kAddRmsnorm, 2, "weight", work, weight));
  KERN_RETURN_IF_ERROR(read_ptr(l, kAddRmsnorm, 3, "y", work, y));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kAddRmsnorm, 0, rows, "one block per row"));
  if (!work) return Status::ok_status();

  std::vector<float> row(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * n;
    uint16_t* res = residual + r * n;
    for (int64_t j = 0; j < n; ++j) {
      // The sum is rounded to bf16 and the norm reads the rounded value,
      // exactly what a model that stores its residual stream in bf16 sees.
      row[j] = round_to_bf16(bf16_to_f32(res[j]) + bf16_to_f32(xr[j]));
    }
    for (int64_t j = 0; j < n; ++j) res[j] = f32_to_bf16(row[j]);  // exact: row[j] is a bf16
    normalize_row(row.data(), weight, y + r * n, n, eps);
  }
  return Status::ok_status();
}

Status head_rmsnorm_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kHeadRmsnorm, 9));
  int64_t total = 0, per_token = 0, head_dim = 0, x_stride = 0, y_stride = 0;
  float eps = 0.0f;
  KERN_RETURN_IF_ERROR(read_i32(l, kHeadRmsnorm, 3, "total_heads", 0, total));
  KERN_RETURN_IF_ERROR(read_i32(l, kHeadRmsnorm, 4, "heads_per_token", 1, per_token));
  KERN_RETURN_IF_ERROR(read_i32(l, kHeadRmsnorm, 5, "head_dim", 0, head_dim));
  KERN_RETURN_IF_ERROR(read_i32(l, kHeadRmsnorm, 6, "x_stride", 0, x_stride));
  KERN_RETURN_IF_ERROR(read_i32(l, kHeadRmsnorm, 7, "y_stride", 0, y_stride));
  KERN_RETURN_IF_ERROR(read_f32(l, kHeadRmsnorm, 8, "eps", true, eps));
  if (total % per_token != 0) {
    return launch_error(kHeadRmsnorm, "param 3 (total_heads) is " + std::to_string(total) +
                                          "; must be a multiple of param 4 (heads_per_token) = " +
                                          std::to_string(per_token));
  }
  const int64_t token_elems = per_token * head_dim;
  KERN_RETURN_IF_ERROR(check_at_least(kHeadRmsnorm, 6, "x_stride", x_stride, token_elems,
                                      "heads_per_token * head_dim"));
  KERN_RETURN_IF_ERROR(check_at_least(kHeadRmsnorm, 7, "y_stride", y_stride, token_elems,
                                      "heads_per_token * head_dim"));
  const bool work = total > 0 && head_dim > 0;
  const uint16_t* x = nullptr;
  const uint16_t* weight = nullptr;
  uint16_t* y = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kHeadRmsnorm, 0, "x", work, x));
  KERN_RETURN_IF_ERROR(read_ptr(l, kHeadRmsnorm, 1, "weight", work, weight));
  KERN_RETURN_IF_ERROR(read_ptr(l, kHeadRmsnorm, 2, "y", work, y));
  const int64_t warps = static_cast<int64_t>(l.block[0] / 32);
  if (total > 0 && static_cast<int64_t>(l.grid[0]) * warps < total) {
    return launch_error(kHeadRmsnorm, "grid.x " + std::to_string(l.grid[0]) + " * (block.x " +
                                          std::to_string(l.block[0]) + " / 32) is below " +
                                          "param 3 (total_heads) = " + std::to_string(total) +
                                          " (one warp per head)");
  }
  if (!work) return Status::ok_status();

  std::vector<float> head(static_cast<size_t>(head_dim));
  for (int64_t g = 0; g < total; ++g) {
    const int64_t t = g / per_token, h = g % per_token;
    bf16_to_f32_n(x + t * x_stride + h * head_dim, head.data(), head.size());
    normalize_row(head.data(), weight, y + t * y_stride + h * head_dim, head_dim, eps);
  }
  return Status::ok_status();
}

Status rmsnorm_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 3), n = size_i32(l, 4);
  if (rows == 0 || n == 0) return Status::ok_status();
  e.touch(0, "x", sat_product({rows, n, 2}));
  e.touch(1, "weight", sat_mul(n, 2));
  e.touch(2, "y", sat_product({rows, n, 2}));
  return Status::ok_status();
}

Status add_rmsnorm_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 4), n = size_i32(l, 5);
  if (rows == 0 || n == 0) return Status::ok_status();
  e.touch(0, "x", sat_product({rows, n, 2}));
  e.touch(1, "residual", sat_product({rows, n, 2}));
  e.touch(2, "weight", sat_mul(n, 2));
  e.touch(3, "y", sat_product({rows, n, 2}));
  return Status::ok_status();
}

Status head_rmsnorm_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t total = size_i32(l, 3), per_token = size_i32(l, 4), head_dim = size_i32(l, 5);
  if (total == 0 || head_dim == 0 || per_token == 0) return Status::ok_status();
  const uint64_t tokens = (total + per_token - 1) / per_token;
  const uint64_t row = sat_mul(per_token, head_dim);
  e.touch(0, "x", strided_bytes(tokens, size_i32(l, 6), row, 2));
  e.touch(1, "weight", sat_mul(head_dim, 2));
  e.touch(2, "y", strided_bytes(tokens, size_i32(l, 7), row, 2));
  return Status::ok_status();
}

}  // namespace kern::cpu
