// kern_last_row (docs/kernels.md §14a): row 0 of a [rows, row_bytes] buffer
// = its row rows - 1, in place (a byte copy; nothing for rows <= 1). How
// `prefill_last` runs its final norm, lm_head and sampling on the last row only.
#include <cstring>

#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {
constexpr const char* kName = "kern_last_row";
}  // namespace

Status last_row(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 3));
  int64_t rows = 0, row_bytes = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 1, "rows", 0, rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 2, "row_bytes", 0, row_bytes));
  const bool work = rows > 1 && row_bytes > 0;
  uint8_t* x = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "x", work, x));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, work ? 1 : 0, "one block"));
  if (!work) return Status::ok_status();
  // Rows rows - 1 and 0 are disjoint for rows > 1.
  std::memcpy(x, x + (rows - 1) * row_bytes, static_cast<size_t>(row_bytes));
  return Status::ok_status();
}

Status last_row_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t rows = size_i32(l, 1), row_bytes = size_i32(l, 2);
  if (rows <= 1 || row_bytes == 0) return Status::ok_status();
  e.touch(0, "x", sat_mul(rows, row_bytes));  // rows 0 and rows - 1
  return Status::ok_status();
}

}  // namespace kern::cpu
