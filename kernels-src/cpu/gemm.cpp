// The GEMM built-ins (docs/kernels.md §10, SPEC §3 runtime extern ops):
// extern:cublaslt_bf16_tn      c[m, n] = bf16(a[m, k] . w[n, k]^T)
// extern:cublaslt_bf16_tn_acc  c[m, n] = bf16(c + a . w^T)
// with f32 accumulation and one rounding per output element. This is the
// cpu device's hot spot (it runs whole models), so it is written to be
// reasonably fast without BLAS: a is widened to f32 once; w is used four
// rows at a time, read as bf16 in place for few a rows (decode) or widened
// into a small f32 panel reused by up to 16 a rows, three a rows at a time
// (each w vector loaded once for three rows); each dot product uses eight
// independent f32 accumulators (a loop the compiler vectorises, cloned for
// AVX2) combined in a fixed order, with no contraction into FMA
// (-ffp-contract=off), so every c element is computed by the same arithmetic
// whatever the tiling, thread count or instruction set (results do not
// depend on the machine). bench/cpu_kernels_bench measures it.
// Large problems split the n range over up to 8 std::threads.
//
// Not supported: c overlapping a or w (cublasLt forbids it as well).
#include <algorithm>
#include <functional>
#include <new>
#include <vector>

#include "common/bf16.h"
#include "common/extern_ops.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/parallel.h"

namespace kern::cpu {

namespace {

// Their names come from the table; the literals behind them end in NUL.
constexpr const char* kGemm = extern_op_symbol(ExternOpId::kGemmBf16Tn).data();
constexpr const char* kGemmAcc = extern_op_symbol(ExternOpId::kGemmBf16TnAcc).data();
constexpr int kLanes = 8;           // independent accumulators per dot product
constexpr int64_t kPanelRows = 4;   // w rows widened and used together
constexpr int64_t kRowTile = 16;    // a rows kept hot while a w panel is reused
constexpr int kRowBlock = 3;        // a rows per register block (3 x 4 accumulators + operands fit 16 ymm)
constexpr int64_t kWidenRows = 4;   // from this many rows per tile, widen w panels first

/// The problem: a [m, k] already widened to f32; w [n, k] and c [m, n] bf16.
struct Gemm {
  const float* a = nullptr;
  const uint16_t* w = nullptr;
  uint16_t* c = nullptr;
  int64_t m = 0, n = 0, k = 0;
  bool accumulate = false;
};

inline float widen(float x) { return x; }
inline float widen(uint16_t x) { return bf16_to_f32(x); }

/// out[r] = a . w[r] for r < R (w rows are k elements apart; W is float for a
/// widened panel, uint16_t for bf16 read in place), each with the same f32
/// operation order: lane-wise products, lanes summed pairwise, then the tail
/// elements in order. Widening is exact, so both W give identical results.
template <int R, typename W>
[[gnu::always_inline]] inline void panel_dots(const float* a, const W* w, int64_t k, float* out) {
  float acc[R][kLanes] = {};
  const int64_t body = k - k % kLanes;
  for (int64_t x = 0; x < body; x += kLanes) {
    for (int r = 0; r < R; ++r) {
      const W* wr = w + r * k + x;
      for (int lane = 0; lane < kLanes; ++lane) acc[r][lane] += a[x + lane] * widen(wr[lane]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const float* v = acc[r];
    float sum = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
    for (int64_t x = body; x < k; ++x) sum += a[x] * widen(w[r * k + x]);
    out[r] = sum;
  }
}

/// panel_dots for A a rows at once (row q at a + q * k), with per-element
/// arithmetic identical to A panel_dots calls: each w vector loaded once
/// serves A rows, which divides the loads per multiply-add by A.
template <int A, int R>
[[gnu::always_inline]] inline void panel_dots_rows(const float* a, const float* w, int64_t k,
                                                   float (*out)[kPanelRows]) {
  float acc[A][R][kLanes] = {};
  const int64_t body = k - k % kLanes;
  for (int64_t x = 0; x < body; x += kLanes) {
    for (int r = 0; r < R; ++r) {
      const float* wr = w + r * k + x;
      for (int q = 0; q < A; ++q) {
        for (int lane = 0; lane < kLanes; ++lane) acc[q][r][lane] += a[q * k + x + lane] * wr[lane];
      }
    }
  }
  for (int q = 0; q < A; ++q) {
    for (int r = 0; r < R; ++r) {
      const float* v = acc[q][r];
      float sum = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
      for (int64_t x = body; x < k; ++x) sum += a[q * k + x] * w[r * k + x];
      out[q][r] = sum;
    }
  }
}

/// Dots of A consecutive a rows with `rows` (1..4) consecutive rows of a widened panel.
template <int A>
[[gnu::always_inline]] inline void dots_rows_for(int64_t rows, const float* a, const float* w, int64_t k,
                                                 float (*out)[kPanelRows]) {
  switch (rows) {
    case 4: panel_dots_rows<A, 4>(a, w, k, out); break;
    case 3: panel_dots_rows<A, 3>(a, w, k, out); break;
    case 2: panel_dots_rows<A, 2>(a, w, k, out); break;
    default: panel_dots_rows<A, 1>(a, w, k, out); break;
  }
}

/// Dots of one a row with `rows` (1..4) consecutive w rows.
template <typename W>
[[gnu::always_inline]] inline void dots_for(int64_t rows, const float* a_row, const W* w, int64_t k, float* dots) {
  switch (rows) {
    case 4: panel_dots<4>(a_row, w, k, dots); break;
    case 3: panel_dots<3>(a_row, w, k, dots); break;
    case 2: panel_dots<2>(a_row, w, k, dots); break;
    default: panel_dots<1>(a_row, w, k, dots); break;
  }
}

/// Computes columns [n_begin, n_end) of c for every row; `panel` is scratch
/// of kPanelRows * k floats owned by the calling thread. A tile of few a rows
/// (decode: m = 1) reads w as bf16 in place; larger tiles widen each w panel
/// once and reuse it. Never throws.
__attribute__((target_clones("avx2", "default"))) void gemm_columns(const Gemm& g, int64_t n_begin,
                                                                   int64_t n_end, float* panel) {
  float dots[kRowBlock][kPanelRows];
  const auto store = [&](int64_t i, int64_t j, int64_t rows, const float* d) {
    uint16_t* c_row = g.c + i * g.n + j;
    for (int64_t r = 0; r < rows; ++r) {
      const float old = g.accumulate ? bf16_to_f32(c_row[r]) : 0.0f;
      c_row[r] = f32_to_bf16(g.accumulate ? old + d[r] : d[r]);
    }
  };
  for (int64_t i0 = 0; i0 < g.m; i0 += kRowTile) {
    const int64_t i1 = std::min(i0 + kRowTile, g.m);
    const bool widen_panel = i1 - i0 >= kWidenRows;
    for (int64_t j = n_begin; j < n_end; j += kPanelRows) {
      const int64_t rows = std::min(kPanelRows, n_end - j);
      const uint16_t* w = g.w + j * g.k;
      if (!widen_panel) {
        for (int64_t i = i0; i < i1; ++i) {
          dots_for(rows, g.a + i * g.k, w, g.k, dots[0]);
          store(i, j, rows, dots[0]);
        }
        continue;
      }
      bf16_to_f32_n(w, panel, static_cast<size_t>(rows * g.k));
      int64_t i = i0;
      for (; i + kRowBlock <= i1; i += kRowBlock) {
        dots_rows_for<kRowBlock>(rows, g.a + i * g.k, panel, g.k, dots);
        for (int q = 0; q < kRowBlock; ++q) store(i + q, j, rows, dots[q]);
      }
      for (; i < i1; ++i) {
        dots_rows_for<1>(rows, g.a + i * g.k, panel, g.k, dots);
        store(i, j, rows, dots[0]);
      }
    }
  }
}

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
    std::vector<float> a_f32(static_cast<size_t>(m * k));
    if (k > 0) bf16_to_f32_n(a, a_f32.data(), a_f32.size());
    const Gemm g{a_f32.data(), w, c, m, n, k, accumulate};

    const int64_t panels = (n + kPanelRows - 1) / kPanelRows;
    const unsigned threads = cpu_threads(m * n * k, panels);
    std::vector<std::vector<float>> scratch(threads,
                                            std::vector<float>(static_cast<size_t>(kPanelRows * k)));
    run_ranges(panels, threads, [&](unsigned t, int64_t b, int64_t e) {
      gemm_columns(g, std::min(n, b * kPanelRows), std::min(n, e * kPanelRows), scratch[t].data());
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
