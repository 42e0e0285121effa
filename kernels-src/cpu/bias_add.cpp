// kern_bias_add_bf16 (docs/kernels.md §6a): a projection's bias added in
// place to its output rows (Qwen2's q, k and v biases on the merged qkv
// row): x[r, i] = bf16(f32(x[r, i]) + f32(bias[i])) for i < n, rows r with
// stride ld (elements). One rounding of the sum, in f32.
#include "common/bf16.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {
constexpr const char* kName = "kern_bias_add_bf16";
}  // namespace

Status bias_add_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 5));
  int64_t rows = 0, n = 0, ld = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 2, "rows", 0, rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 3, "n", 0, n));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 4, "ld", 0, ld));
  KERN_RETURN_IF_ERROR(check_at_least(kName, 4, "ld", ld, n, "n"));
  const bool work = rows > 0 && n > 0;
  uint16_t* x = nullptr;
  const uint16_t* bias = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "x", work, x));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "bias", work, bias));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, rows, "one block per row"));
  if (!work) return Status::ok_status();
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* row = x + r * ld;
    for (int64_t i = 0; i < n; ++i) row[i] = f32_to_bf16(bf16_to_f32(row[i]) + bf16_to_f32(bias[i]));
  }
  return Status::ok_status();
}

Status bias_add_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 2), n = size_i32(l, 3), ld = size_i32(l, 4);
  if (rows == 0 || n == 0) return Status::ok_status();
  e.touch(0, "x", strided_bytes(rows, ld, n, 2));
  e.touch(1, "bias", sat_mul(n, 2));
  return Status::ok_status();
}

}  // namespace kern::cpu
