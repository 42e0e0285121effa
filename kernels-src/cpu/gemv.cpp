// The decode GEMV family (docs/kernels.md §11): kern_gemv_bf16,
// kern_gemv_acc_bf16, kern_gemv_residual_bf16, kern_gemv_silu_mul_bf16,
// kern_gemv_rmsnorm_bf16, kern_gemv_rmsnorm_silu_mul_bf16.
//
// Each output element is computed in exactly the order of the CUDA twin
// (kernels-src/cuda/gemv.cu), so that the row invariance it promises (a row
// at m = 8 equals the row at m = 1, bit for bit) holds here too and the two
// agree as closely as f32 allows:
//   * the split's 8-element groups are dealt to 32 "lanes" round robin, each
//     lane accumulating its elements in order with a fused multiply-add;
//   * the lane sums are combined by the xor butterfly of warp_sum;
//   * splits are added in order 0, 1, ... (the last block's merge);
//   * the RMSNorm prologue's sum of squares is block_sum's order over 128
//     threads (thread t: groups t, t + 128, ...).
// The per-split sums are also written to `partial` when splits > 1, as the
// CUDA twin does; `counters` is left at zero. The dots come from
// GemvLaneDots (gemv_lanes.h): each w row is read once for all m rows, the
// 32 lanes vectorised (AVX-512 / AVX2 where the machine has them, same bits).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "common/bf16.h"
#include "common/extern_ops.h"
#include "kernels-src/cpu/gemv_lanes.h"
#include "kernels-src/cpu/gemv_packed.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/parallel.h"
#include "kernels-src/cpu/tile_argmax.h"

namespace kern::cpu {

namespace {

constexpr int64_t kMaxM = 8;
constexpr int64_t kCols = 8;           // output columns per block (grid.x = ceil(n / 8))
static_assert(kCols == kArgmaxTileCols, "an argmax tile is one block's columns");
constexpr uint32_t kBlockThreads = 128;
constexpr int kLanes = 32;

enum class Epi { kStore, kAcc, kResidual, kSiluMul, kArgmax };

/// The variant: its symbol, prologue, epilogue and where its params sit.
struct Variant {
  const char* name;
  bool norm;
  Epi epi;
};

/// v[0] after warp_sum's xor butterfly (16, 8, 4, 2, 1) over 32 lane values.
float butterfly(std::array<float, kLanes> v) {
  for (int o = kLanes / 2; o > 0; o >>= 1) {
    std::array<float, kLanes> t{};
    for (int x = 0; x < kLanes; ++x) t[x] = v[x] + v[x ^ o];
    v = t;
  }
  return v[0];
}

/// The normalised row bf16(a * rsqrt(mean(a^2) + eps) * nw) as f32, with the
/// sum of squares in block_sum's order over kBlockThreads threads.
void norm_row(const uint16_t* a, const uint16_t* nw, int64_t k, float eps, float* out) {
  const int64_t groups = (k + 7) / 8;
  std::array<float, kBlockThreads> thread_ss{};
  for (int64_t g = 0; g < groups; ++g) {
    float& ss = thread_ss[g % kBlockThreads];
    const int64_t end = std::min(k, 8 * g + 8);
    for (int64_t x = 8 * g; x < end; ++x) {
      const float v = bf16_to_f32(a[x]);
      ss = std::fma(v, v, ss);
    }
  }
  std::array<float, kLanes> warps{};
  constexpr int kWarps = kBlockThreads / kLanes;
  for (int wi = 0; wi < kWarps; ++wi) {
    std::array<float, kLanes> lanes{};
    std::copy_n(thread_ss.begin() + wi * kLanes, kLanes, lanes.begin());
    warps[wi] = butterfly(lanes);
  }
  const float ss = butterfly(warps);  // lanes >= kWarps hold 0
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(k) + eps);
  for (int64_t x = 0; x < k; ++x) out[x] = round_to_bf16(bf16_to_f32(a[x]) * inv * bf16_to_f32(nw[x]));
}

/// Everything a launch needs, validated.
struct Problem {
  const Variant* v = nullptr;
  const uint16_t* a = nullptr;
  const uint16_t* nw = nullptr;
  const uint16_t* w = nullptr;
  const PackedGemvW* packed = nullptr;  ///< w in the lane order (gemv_packed.h), or null: read w
  const uint16_t* residual = nullptr;
  uint16_t* c = nullptr;
  float* partial = nullptr;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldc = 0, splits = 1;
  float eps = 0.0f;
  float* argmax_val = nullptr;    ///< the argmax epilogue's tile partials [m, grid_x]
  int32_t* argmax_idx = nullptr;
  int64_t grid_x = 0;
};

/// W row of output column `col`; for SiLU*mul (w = [gate; up]) its gate
/// row, with the up row n + col returned in `up`.
int64_t w_row(const Problem& p, int64_t col, int64_t& up) {
  up = p.n + col;
  return col;
}

/// The a elements (m * k) above which a launch's prologue (widen or
/// RMSNorm, then the lane layout) runs its rows on threads: m = 8 at k =
/// 1024 does, m = 1 at k <= 4096 does not (a pool hand-off costs a few us).
constexpr int64_t kPrologueThreadElems = int64_t{1} << 12;

/// Columns per GemvLaneDots::dots call in compute_columns.
constexpr int64_t kChunkCols = 32;
static_assert(kChunkCols % kCols == 0, "a chunk holds whole argmax tiles");

/// sums[c * m + i] = the merged dot of a row i with w row row0 + c (c <
/// cols): the per-split sums `split` ([cols, splits, m], from
/// GemvLaneDots::dots), written to partial when split, added in split order.
void merge_splits(const Problem& p, int64_t row0, int64_t cols, const float* split, float* sums) {
  const int64_t rows_total = p.v->epi == Epi::kSiluMul ? 2 * p.n : p.n;
  if (p.splits > 1) {
    // partial is [splits, m, rows]: a run of `cols` floats per (split, row),
    // written in that order (a column-major walk scattered every store).
    for (int64_t s = 0; s < p.splits; ++s)
      for (int64_t i = 0; i < p.m; ++i) {
        float* dst = p.partial + (s * p.m + i) * rows_total + row0;
        for (int64_t c = 0; c < cols; ++c) dst[c] = split[(c * p.splits + s) * p.m + i];
      }
  }
  // Split by split over a column's m contiguous sums (the loop over i
  // vectorises; one (c, i) at a time over s took ~3% of an m = 8 step):
  // each sum still adds its splits in order 0, 1, ...
  for (int64_t c = 0; c < cols; ++c) {
    const float* base = split + c * p.splits * p.m;
    float* out = sums + c * p.m;
    for (int64_t i = 0; i < p.m; ++i) out[i] = base[i];
    for (int64_t s = 1; s < p.splits; ++s)
      for (int64_t i = 0; i < p.m; ++i) out[i] = out[i] + base[s * p.m + i];
  }
}

/// The argmax epilogue of tiles [t0, t1): per row and 8-column tile, the
/// greatest stored bf16 logit and its column (tile_argmax.h), at
/// p.argmax_val / p.argmax_idx [i * grid_x + tile].
void tile_argmax(const Problem& p, int64_t t0, int64_t t1) {
  for (int64_t i = 0; i < p.m; ++i)
    tile_argmax_row(p.c + i * p.ldc, p.n, t0, t1, p.argmax_val + i * p.grid_x, p.argmax_idx + i * p.grid_x);
}

/// Output columns [col_begin, col_end) for every row, kChunkCols at a time
/// (compute() hands each thread one chunk per call): each w row is read
/// once for all m a rows.
void compute_columns(const Problem& p, const GemvLaneDots& dots, int64_t col_begin, int64_t col_end) {
  // Per-thread scratch, kept between calls (a call per chunk of columns).
  thread_local std::vector<float> split_buf, d_buf, u_buf;
  const auto chunk = static_cast<size_t>(kChunkCols * p.m);
  if (split_buf.size() < chunk * static_cast<size_t>(p.splits)) split_buf.resize(chunk * static_cast<size_t>(p.splits));
  if (d_buf.size() < chunk) d_buf.resize(chunk), u_buf.resize(chunk);
  float* split = split_buf.data();
  float* dc = d_buf.data();
  float* uc = u_buf.data();
  for (int64_t c0 = col_begin; c0 < col_end; c0 += kChunkCols) {
    const int64_t cols = std::min(kChunkCols, col_end - c0);
    int64_t up0 = 0;
    const int64_t row0 = w_row(p, c0, up0);
    // The n - c0 w rows from row0 (gate or up) are readable: the next
    // chunk's first rows are prefetched during this one (whichever thread
    // takes it).
    // One split: the dots are the sums ([cols, m] either way), no merge.
    const bool merge = p.splits > 1;
    // The packed copy keeps w's row offsets (row stride k).
    const auto run_dots = [&](int64_t row, float* dst) {
      if (p.packed != nullptr)
        dots.dots_packed(p.packed->data + row * p.k, cols, dst, p.n - c0, p.packed->w_min1, p.packed->w_max);
      else
        dots.dots(p.w + row * p.k, cols, dst, p.n - c0);
    };
    run_dots(row0, merge ? split : dc);
    if (merge) merge_splits(p, row0, cols, split, dc);
    if (p.v->epi == Epi::kSiluMul) {
      run_dots(up0, merge ? split : uc);
      if (merge) merge_splits(p, up0, cols, split, uc);
    }
    // The epilogue, one loop per kind over a row's contiguous columns (a
    // switch per element and a column-major walk cost ~3% of an m = 8 decode
    // step); per element the same operations as before.
    for (int64_t i = 0; i < p.m; ++i) {
      uint16_t* out = p.c + i * p.ldc + c0;
      const auto at = [&](int64_t c) { return static_cast<size_t>(c * p.m + i); };
      switch (p.v->epi) {
        case Epi::kStore:
        case Epi::kArgmax:
          for (int64_t c = 0; c < cols; ++c) out[c] = f32_to_bf16(dc[at(c)]);
          break;
        case Epi::kAcc:
          for (int64_t c = 0; c < cols; ++c) out[c] = f32_to_bf16(bf16_to_f32(out[c]) + dc[at(c)]);
          break;
        case Epi::kResidual: {
          const uint16_t* res = p.residual + i * p.ldc + c0;
          for (int64_t c = 0; c < cols; ++c) out[c] = f32_to_bf16(bf16_to_f32(res[c]) + dc[at(c)]);
          break;
        }
        case Epi::kSiluMul:
          for (int64_t c = 0; c < cols; ++c) {
            const float di = dc[at(c)];
            out[c] = f32_to_bf16(di / (1.0f + std::exp(-di)) * uc[at(c)]);
          }
          break;
      }
    }
    // The chunk's tiles while its logits are in cache, on this thread: c0 is
    // a multiple of kCols and a chunk ends on a tile or at n.
    if (p.v->epi == Epi::kArgmax) tile_argmax(p, c0 / kCols, (c0 + cols + kCols - 1) / kCols);
  }
}

/// The last tile block's reduce: next_token[i] = the column of row i's best
/// tile partial (greater value, then smaller column: kern_argmax_reduce's
/// serial scan over the ceil(n / 8) tiles).
void reduce_tiles(const Problem& p, int64_t grid_x, const float* val, const int32_t* idx, int64_t* next_token) {
  const int64_t tiles = (p.n + kCols - 1) / kCols;
  for (int64_t i = 0; i < p.m; ++i) {
    float bv = -std::numeric_limits<float>::infinity();
    int32_t bi = std::numeric_limits<int32_t>::max();
    for (int64_t t = 0; t < tiles; ++t) {
      const float v = val[i * grid_x + t];
      const int32_t c = idx[i * grid_x + t];
      if (v > bv || (v == bv && c < bi)) bv = v, bi = c;
    }
    next_token[i] = bi;
  }
}

/// Widens (or RMS-normalises) the a rows, then computes every output column,
/// on up to kMaxThreads threads over column tiles when the work is large.
void compute(Problem& p) {
  const Variant& v = *p.v;
  // [m, k]: a widened, or normalised; kept between this thread's launches
  // (every element is written before it is read).
  thread_local std::vector<float> a_f32;
  if (a_f32.size() < static_cast<size_t>(p.m * p.k)) a_f32.resize(static_cast<size_t>(p.m * p.k));
  float* const a_rows = a_f32.data();  // the lambda runs on other threads: not their a_f32
  const auto fill = [&p, &v, a_rows](int64_t i) {
    float* row = a_rows + i * p.k;
    if (v.norm) norm_row(p.a + i * p.lda, p.nw, p.k, p.eps, row);
    else if (p.k > 0) bf16_to_f32_n(p.a + i * p.lda, row, static_cast<size_t>(p.k));
  };
  // The rows' prologue and lane layout over threads when there is enough
  // of it (about 20 us at m = 8, k = 1024 on one thread, while the others
  // waited for the dots).
  const unsigned prologue_threads = cpu_threads(p.m * p.k, p.m, kPrologueThreadElems);
  const GemvLaneDots dots(a_rows, p.m, p.k, p.splits, gemv_best_isa(), prologue_threads, fill);
  // Threads over chunks of column tiles, balanced at run time (run_chunks);
  // every element's arithmetic is the same whatever thread computes it.
  const int64_t tiles = (p.n + kCols - 1) / kCols;
  const int64_t work = p.m * p.n * std::max<int64_t>(p.k, 1) * (v.epi == Epi::kSiluMul ? 2 : 1);
  run_chunks(tiles, kChunkCols / kCols, cpu_threads(work, tiles), [&](unsigned, int64_t b, int64_t e) {
    compute_columns(p, dots, std::min(p.n, b * kCols), std::min(p.n, e * kCols));
  });
}

Status run_gemv(const CpuLaunch& l, const Variant& v) {
  using namespace detail;
  const char* kn = v.name;
  const bool res = v.epi == Epi::kResidual;
  const bool amax = v.epi == Epi::kArgmax;
  // Param positions: a, [norm_weight], w, [residual], c, partial, counters,
  // [argmax_val, argmax_idx, next_token], 6 i32, [eps].
  const size_t ia = 0, inw = 1, iw = v.norm ? 2 : 1, ires = iw + 1, ic = iw + (res ? 2 : 1);
  const size_t ipart = ic + 1, icnt = ic + 2, ival = ic + 3, iidx = ic + 4, inext = ic + 5;
  const size_t im = ic + (amax ? 6 : 3);
  KERN_RETURN_IF_ERROR(check_num_args(l, kn, im + 6 + (v.norm ? 1 : 0)));
  Problem p;
  p.v = &v;
  KERN_RETURN_IF_ERROR(read_i32(l, kn, im, "m", 0, p.m));
  KERN_RETURN_IF_ERROR(read_i32(l, kn, im + 1, "n", 0, p.n));
  KERN_RETURN_IF_ERROR(read_i32(l, kn, im + 2, "k", 0, p.k));
  KERN_RETURN_IF_ERROR(read_i32(l, kn, im + 3, "lda", 0, p.lda));
  KERN_RETURN_IF_ERROR(read_i32(l, kn, im + 4, "ldc", 0, p.ldc));
  KERN_RETURN_IF_ERROR(read_i32(l, kn, im + 5, "splits", 1, p.splits));
  if (v.norm) KERN_RETURN_IF_ERROR(read_f32(l, kn, im + 6, "eps", true, p.eps));
  if (p.m > kMaxM) {
    return launch_error(kn, "param " + std::to_string(im) + " (m) is " + std::to_string(p.m) +
                                "; must be <= " + std::to_string(kMaxM) + " (prefill uses " +
                                std::string(extern_op_symbol(ExternOpId::kGemmBf16Tn)) + ")");
  }
  KERN_RETURN_IF_ERROR(check_at_least(kn, im + 3, "lda", p.lda, p.k, "k"));
  KERN_RETURN_IF_ERROR(check_at_least(kn, im + 4, "ldc", p.ldc, p.n, "n"));
  if (v.norm && p.k == 0 && p.m > 0 && p.n > 0) {
    return launch_error(kn, "param " + std::to_string(im + 2) + " (k) is 0; the RMSNorm prologue needs k >= 1");
  }
  const bool out = p.m > 0 && p.n > 0;
  const bool in = out && p.k > 0;
  KERN_RETURN_IF_ERROR(read_ptr(l, kn, ia, "a", in, p.a));
  if (v.norm) KERN_RETURN_IF_ERROR(read_ptr(l, kn, inw, "norm_weight", in, p.nw));
  KERN_RETURN_IF_ERROR(read_ptr(l, kn, iw, "w", in, p.w));
  if (res) KERN_RETURN_IF_ERROR(read_ptr(l, kn, ires, "residual", out, p.residual));
  KERN_RETURN_IF_ERROR(read_ptr(l, kn, ic, "c", out, p.c));
  int32_t* counters = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kn, ipart, "partial", out && p.splits > 1, p.partial));
  KERN_RETURN_IF_ERROR(read_ptr(l, kn, icnt, "counters", out && (p.splits > 1 || amax), counters));
  float* argmax_val = nullptr;
  int32_t* argmax_idx = nullptr;
  int64_t* next_token = nullptr;
  if (amax) {
    KERN_RETURN_IF_ERROR(read_ptr(l, kn, ival, "argmax_val", out, argmax_val));
    KERN_RETURN_IF_ERROR(read_ptr(l, kn, iidx, "argmax_idx", out, argmax_idx));
    KERN_RETURN_IF_ERROR(read_ptr(l, kn, inext, "next_token", out, next_token));
  }
  if (l.block[0] != kBlockThreads || l.block[1] != 1 || l.block[2] != 1) {
    return launch_error(kn, "block is [" + std::to_string(l.block[0]) + ", " + std::to_string(l.block[1]) + ", " +
                                std::to_string(l.block[2]) + "]; must be [128, 1, 1] (4 warps, 8 columns)");
  }
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kn, 0, (p.n + kCols - 1) / kCols, "one block per 8 output columns"));
  KERN_RETURN_IF_ERROR(check_grid_equals(l, kn, 1, im + 5, "splits", p.splits));
  if (v.norm && l.shared_mem_bytes < static_cast<uint64_t>(p.m * p.k * 2)) {
    return launch_error(kn, "shared_mem is " + std::to_string(l.shared_mem_bytes) + " B; must be >= m * k * 2 = " +
                                std::to_string(p.m * p.k * 2) + " (the normalised a rows)");
  }
  if (!out) return Status::ok_status();

  if (l.gemv_packed != nullptr && in)
    p.packed = l.gemv_packed->find(p.w, v.epi == Epi::kSiluMul ? 2 * p.n : p.n, p.k, p.splits);
  p.argmax_val = argmax_val;
  p.argmax_idx = argmax_idx;
  p.grid_x = static_cast<int64_t>(l.grid[0]);
  compute(p);  // the argmax variant's tile partials too
  if (amax) {
    reduce_tiles(p, static_cast<int64_t>(l.grid[0]), argmax_val, argmax_idx, next_token);
  }
  return Status::ok_status();  // counters: the CUDA kernel's, left at zero
}

constexpr Variant kGemv{"kern_gemv_bf16", false, Epi::kStore};
constexpr Variant kGemvAcc{"kern_gemv_acc_bf16", false, Epi::kAcc};
constexpr Variant kGemvResidual{"kern_gemv_residual_bf16", false, Epi::kResidual};
constexpr Variant kGemvSiluMul{"kern_gemv_silu_mul_bf16", false, Epi::kSiluMul};
constexpr Variant kGemvRmsnorm{"kern_gemv_rmsnorm_bf16", true, Epi::kStore};
constexpr Variant kGemvRmsnormSiluMul{"kern_gemv_rmsnorm_silu_mul_bf16", true, Epi::kSiluMul};
constexpr Variant kGemvRmsnormArgmax{"kern_gemv_rmsnorm_argmax_bf16", true, Epi::kArgmax};

}  // namespace

bool gemv_w_operand(std::string_view symbol, const CpuLaunch& l, GemvWOperand& out) {
  const Variant* variants[] = {&kGemv,         &kGemvAcc,           &kGemvResidual,     &kGemvSiluMul,
                               &kGemvRmsnorm, &kGemvRmsnormSiluMul, &kGemvRmsnormArgmax};
  const auto* it = std::find_if(std::begin(variants), std::end(variants),
                                [symbol](const Variant* v) { return symbol == v->name; });
  if (it == std::end(variants)) return false;
  const Variant& v = **it;
  // Param positions as run_gemv.
  const size_t iw = v.norm ? 2 : 1, ic = iw + (v.epi == Epi::kResidual ? 2 : 1);
  const size_t im = ic + (v.epi == Epi::kArgmax ? 6 : 3);
  if (l.num_args < im + 6) return false;
  const int64_t n = l.arg<int32_t>(im + 1);
  out.w = l.arg<const uint16_t*>(iw);
  out.rows = v.epi == Epi::kSiluMul ? 2 * n : n;
  out.k = l.arg<int32_t>(im + 2);
  out.splits = l.arg<int32_t>(im + 5);
  out.params[0] = iw;
  out.params[1] = im + 1;
  out.params[2] = im + 2;
  out.params[3] = im + 5;
  return true;
}

Status gemv_bf16(const CpuLaunch& l) { return run_gemv(l, kGemv); }
Status gemv_acc_bf16(const CpuLaunch& l) { return run_gemv(l, kGemvAcc); }
Status gemv_residual_bf16(const CpuLaunch& l) { return run_gemv(l, kGemvResidual); }
Status gemv_silu_mul_bf16(const CpuLaunch& l) { return run_gemv(l, kGemvSiluMul); }
Status gemv_rmsnorm_bf16(const CpuLaunch& l) { return run_gemv(l, kGemvRmsnorm); }
Status gemv_rmsnorm_silu_mul_bf16(const CpuLaunch& l) { return run_gemv(l, kGemvRmsnormSiluMul); }
Status gemv_rmsnorm_argmax_bf16(const CpuLaunch& l) { return run_gemv(l, kGemvRmsnormArgmax); }

}  // namespace kern::cpu

namespace kern::cpu {

namespace {

/// The bytes a gemv variant touches (param positions as run_gemv): the m
/// strided a rows, the whole w ([n or 2n, k]), the m strided c (and
/// residual) rows, the partials and the tile counters when split (the CUDA
/// twin's; this twin writes the partials only), the argmax partials.
Status gemv_extents(const CpuLaunch& l, const Variant& v, CpuExtents& e) {
  using namespace detail;
  const bool res = v.epi == Epi::kResidual, amax = v.epi == Epi::kArgmax;
  const size_t iw = v.norm ? 2 : 1, ic = iw + (res ? 2 : 1), im = ic + (amax ? 6 : 3);
  if (l.num_args < im + 6) return Status::ok_status();  // the kernel reports the param count
  const uint64_t m = size_i32(l, im), n = size_i32(l, im + 1), k = size_i32(l, im + 2);
  const uint64_t lda = size_i32(l, im + 3), ldc = size_i32(l, im + 4), splits = size_i32(l, im + 5);
  if (m == 0 || n == 0) return Status::ok_status();
  const uint64_t rows = v.epi == Epi::kSiluMul ? 2 * n : n;
  if (k > 0) {
    e.touch(0, "a", strided_bytes(m, lda, k, 2));
    if (v.norm) e.touch(1, "norm_weight", sat_mul(k, 2));
    e.touch(iw, "w", sat_product({rows, k, 2}));
  }
  if (res) e.touch(iw + 1, "residual", strided_bytes(m, ldc, n, 2));
  e.touch(ic, "c", strided_bytes(m, ldc, n, 2));
  if (splits > 1) e.touch(ic + 1, "partial", sat_product({splits, m, rows, 4}));
  // The tile counters when split; the argmax's done counter after them.
  if (splits > 1 || amax) e.touch(ic + 2, "counters", sat_mul((n + kCols - 1) / kCols + (amax ? 1 : 0), 4));
  if (amax) {
    const uint64_t tiles = (n + kCols - 1) / kCols;
    e.touch(ic + 3, "argmax_val", strided_bytes(m, l.grid[0], tiles, 4));
    e.touch(ic + 4, "argmax_idx", strided_bytes(m, l.grid[0], tiles, 4));
    e.touch(ic + 5, "next_token", sat_mul(m, 8));
  }
  return Status::ok_status();
}

}  // namespace

Status gemv_bf16_extents(const CpuLaunch& l, CpuExtents& e) { return gemv_extents(l, kGemv, e); }
Status gemv_residual_bf16_extents(const CpuLaunch& l, CpuExtents& e) { return gemv_extents(l, kGemvResidual, e); }
Status gemv_silu_mul_bf16_extents(const CpuLaunch& l, CpuExtents& e) { return gemv_extents(l, kGemvSiluMul, e); }
Status gemv_rmsnorm_bf16_extents(const CpuLaunch& l, CpuExtents& e) { return gemv_extents(l, kGemvRmsnorm, e); }
Status gemv_rmsnorm_silu_mul_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  return gemv_extents(l, kGemvRmsnormSiluMul, e);
}
Status gemv_rmsnorm_argmax_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  return gemv_extents(l, kGemvRmsnormArgmax, e);
}

}  // namespace kern::cpu
