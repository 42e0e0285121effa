// The GEMM built-ins (docs/kernels.md §10, SPEC §3 runtime extern ops):
// extern:cublaslt_bf16_tn      c[m, n] = bf16(a[m, k] . w[n, k]^T)
// extern:cublaslt_bf16_tn_acc  c[m, n] = bf16(c + a . w^T)
// with f32 accumulation and one rounding per output element. This is the
// cpu device's prefill hot spot, so it is written to be fast without BLAS:
// the dots run in one fixed order (gemm_tiles.h: 16 lanes of fmas over bf16
// pairs, vdpbf16ps's order) on the fastest path this CPU has (cpuid at run
// time: AVX-512 BF16, AVX2, portable), every path giving the same bits, so a
// c element depends neither on the machine nor on m, the tiling or the
// thread count. Large problems split the columns over the cores
// (parallel.h, run_chunks: any chunk on any thread, same bits).
// bench/cpu_kernels_bench measures it.
//
// Not supported: c overlapping a or w (cublasLt forbids it as well).
#include <algorithm>
#include <new>

#include "common/extern_ops.h"
#include "kernels-src/cpu/gemm_tiles.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/parallel.h"

namespace kern::cpu {

namespace {

// Their names come from the table; the literals behind them end in NUL.
constexpr const char* kGemm = extern_op_symbol(ExternOpId::kGemmBf16Tn).data();
constexpr const char* kGemmAcc = extern_op_symbol(ExternOpId::kGemmBf16TnAcc).data();
constexpr int64_t kColumnUnit = 12;  // columns per thread-range item (a multiple of every path's panel)
constexpr int64_t kChunkUnits = 2;   // items a thread claims at a time (24 columns: 6 vdpbf16ps panels)

Status run_gemm(const CpuLaunch& l, const char* kname, bool accumulate) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kname, 6));
  int64_t m = 0, n = 0, k = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kname, 3, "m", 0, m));
  KERN_RETURN_IF_ERROR(read_i32(l, kname, 4, "n", 0, n));
  KERN_RETURN_IF_ERROR(read_i32(l, kname, 5, "k", 0, k));
  const bool out = m > 0 && n > 0;
  const uint16_t* a = nullptr;
  const uint16_t* w = nullptr;
  uint16_t* c = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 0, "a", out && k > 0, a));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 1, "w", out && k > 0, w));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 2, "c", out, c));
  if (!out) return Status::ok_status();

  try {
    const GemmTiles tiles(GemmProblem{a, w, c, m, n, k, accumulate}, gemv_best_isa());
    const int64_t units = (n + kColumnUnit - 1) / kColumnUnit;
    const unsigned threads = cpu_threads(m * n * k, units);
    // Balanced at run time (run_chunks): a worker that enters late, or is
    // descheduled midway, leaves its columns to the other threads instead
    // of to a wait or to the caller alone.
    run_chunks(units, kChunkUnits, threads, [&](unsigned, int64_t b, int64_t e) {
      tiles.columns(std::min(n, b * kColumnUnit), std::min(n, e * kColumnUnit));
    });
  } catch (const std::bad_alloc&) {
    return make_error(ErrorKind::kDevice, std::string(kname) + ": out of host memory for m " +
                                              std::to_string(m) + ", n " + std::to_string(n) +
                                              ", k " + std::to_string(k));
  }
  return Status::ok_status();
}

}  // namespace

Status gemm_bf16_tn(const CpuLaunch& l) { return run_gemm(l, kGemm, false); }

Status gemm_bf16_tn_acc(const CpuLaunch& l) { return run_gemm(l, kGemmAcc, true); }

Status gemm_bf16_tn_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t m = size_i32(l, 3), n = size_i32(l, 4), k = size_i32(l, 5);
  if (m == 0 || n == 0) return Status::ok_status();
  if (k > 0) {
    e.touch(0, "a", sat_product({m, k, 2}));
    e.touch(1, "w", sat_product({n, k, 2}));
  }
  e.touch(2, "c", sat_product({m, n, 2}));
  return Status::ok_status();
}

}  // namespace kern::cpu
