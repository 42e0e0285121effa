// The collective built-ins on the cpu device (docs/parallel.md):
//   extern:allreduce_sum_f32       x = sum over ranks of x (in place)
//   extern:allreduce_sum_f32_bf16  the same, then y = bf16(x)
// The transport only moves bytes (Collective::all_gather, Gloo in kern-load);
// the sum is added here as a pairwise tree in rank order (tree_sum_f32), the
// same on every rank, so every rank gets identical bits and the tree
// continues the split-K GEMMs' trees (gemm_splitk.cpp): TP = N equals TP = 1.
// Bandwidth is world x count x 4 bytes per rank (an all-gather, not a ring
// reduce-scatter): the price of a fixed order, small at the hidden sizes of
// the rows it carries.
#include <new>
#include <vector>

#include "common/bf16.h"
#include "common/extern_ops.h"
#include "kernels-src/cpu/collective.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {

constexpr const char* kAllReduce = extern_op_symbol(ExternOpId::kAllReduceSumF32).data();
constexpr const char* kAllReduceBf16 = extern_op_symbol(ExternOpId::kAllReduceSumF32Bf16).data();

/// x[count] = the tree sum over the ranks; y (when not null) = bf16(x).
Status run_allreduce(const CpuLaunch& l, const char* kname, float* x, uint16_t* y,
                     int64_t count) {
  if (count == 0) return Status::ok_status();
  if (l.collective == nullptr)
    return detail::launch_error(kname, "this device belongs to no tensor-parallel world (run with --tp N)");
  Collective& comm = *l.collective;
  const size_t world = comm.world();
  const size_t n = static_cast<size_t>(count);
  try {
    thread_local std::vector<float> gathered;  // reused between launches: no allocation per step
    if (gathered.size() < world * n) gathered.resize(world * n);
    KERN_RETURN_IF_ERROR(comm.all_gather(x, gathered.data(), n * sizeof(float)), kname);
    for (size_t i = 0; i < n; ++i) x[i] = tree_sum_f32(gathered.data() + i, world, n);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorKind::kDevice, std::string(kname) + ": out of host memory for " +
                                              std::to_string(world) + " x " + std::to_string(count) + " floats");
  }
  if (y != nullptr)
    for (size_t i = 0; i < n; ++i) y[i] = f32_to_bf16(x[i]);
  return Status::ok_status();
}

}  // namespace

Status allreduce_sum_f32(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kAllReduce, 2));
  int64_t count = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kAllReduce, 1, "count", 0, count));
  float* x = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kAllReduce, 0, "x", count > 0, x));
  return run_allreduce(l, kAllReduce, x, nullptr, count);
}

Status allreduce_sum_f32_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kAllReduceBf16, 3));
  int64_t count = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kAllReduceBf16, 2, "count", 0, count));
  float* x = nullptr;
  uint16_t* y = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kAllReduceBf16, 0, "x", count > 0, x));
  KERN_RETURN_IF_ERROR(read_ptr(l, kAllReduceBf16, 1, "y", count > 0, y));
  return run_allreduce(l, kAllReduceBf16, x, y, count);
}

Status allreduce_sum_f32_extents(const CpuLaunch& l, CpuExtents& e) {
  e.touch(0, "x", detail::sat_product({detail::size_i32(l, 1), 4}));
  return Status::ok_status();
}

Status allreduce_sum_f32_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  const uint64_t count = detail::size_i32(l, 2);
  e.touch(0, "x", detail::sat_product({count, 4}));
  e.touch(1, "y", detail::sat_product({count, 2}));
  return Status::ok_status();
}

}  // namespace kern::cpu
