// The cpu GEMM's dot products (kernels-src/cpu/gemm.cpp, docs/kernels.md
// §10) in one fixed operation order, with a portable, an AVX2 (FMA) and an
// AVX-512 BF16 (vdpbf16ps) path that give the same bits. The order of
// c[i, j] = a row i . w row j (k elements, bf16):
//   * 16 lanes; chunk q covers elements [32q, 32q + 32) (zeros past k);
//     lane L of chunk q takes the pair (32q + 2L, 32q + 2L + 1);
//   * each lane accumulates its pairs chunk by chunk from +0 with fmas,
//     element 32q + 2L + 1 first, then 32q + 2L: vdpbf16ps's order (Intel
//     SDM; gemv_lanes.h checks once per process that this CPU's instruction
//     gives those bits);
//   * the 16 lane sums are added as (L, L + 8), then (L, L + 4), (L, L + 2),
//     (0, 1): the halving horizontal sum;
//   * the epilogue adds c first for the accumulating variant, then rounds
//     to bf16 once.
// A bf16 x bf16 product is exact in f32, so each fma is the exactly rounded
// sum; a row's result depends only on its a row and w, never on m, the
// tiling, the thread count or the instruction set (batch invariance). The
// vdpbf16ps path runs where its denormal flushing cannot act
// (vdpbf16ps_exact on the magnitudes of the a values and each w panel it
// read) and recomputes a panel by the FMA path elsewhere.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "kernels-src/cpu/gemv_lanes.h"

namespace kern::cpu {

/// One GEMM launch: c[m, n] = bf16((c +) a[m, k] . w[n, k]^T), bf16 bits,
/// row-major, c not overlapping a or w.
struct GemmProblem {
  const uint16_t* a = nullptr;
  const uint16_t* w = nullptr;
  uint16_t* c = nullptr;
  int64_t m = 0, n = 0, k = 0;
  bool accumulate = false;
};

/// The a rows of a GEMM laid out for one path (isa: kPortable, kAvx2, or
/// kAvx512Bf16; kAvx512 runs the AVX2 path; an unsupported isa runs
/// kPortable), then columns of c computed from them on any thread.
class GemmTiles {
 public:
  /// Lays out g.a for `isa` (f32 pairs for the FMA paths; for vdpbf16ps the
  /// bf16 rows themselves, copied zero-padded to a multiple of 32 when k is
  /// not one, and their magnitudes). g must outlive this object. Throws
  /// std::bad_alloc when the layout does not fit in memory.
  GemmTiles(const GemmProblem& g, GemvIsa isa);

  /// Computes c[0..m, n_begin..n_end) in the order above. Thread-safe for
  /// disjoint column ranges. Throws std::bad_alloc only where the vdpbf16ps
  /// path sends a panel back to the FMA path and its layout of a does not fit.
  void columns(int64_t n_begin, int64_t n_end) const;

  /// The path that runs: kPortable, kAvx2 or kAvx512Bf16.
  GemvIsa isa() const { return isa_; }

 private:
  void columns_fma(int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end) const;
  /// The FMA paths' layout of a, made on first use (on any thread: the
  /// vdpbf16ps path needs it only for a panel its check sends back). Throws
  /// std::bad_alloc (from the constructor, where the FMA paths run).
  const float* pairs() const;
  GemmProblem g_;
  GemvIsa isa_;
  int64_t chunks_ = 0;               ///< ceil(k / 32)
  mutable std::once_flag pairs_once_;
  mutable std::unique_ptr<float[]> pairs_;  ///< FMA paths: per row, per chunk [hi 0..7, lo 0..7, hi 8..15, lo 8..15]
  std::unique_ptr<uint16_t[]> a16_;  ///< vdpbf16ps with k % 32 != 0: rows padded to 32 * chunks_
  const uint16_t* a_bf16_ = nullptr;  ///< vdpbf16ps: the a rows (g.a or a16_)
  int64_t lda_ = 0;                  ///< row stride of a_bf16_ (elements)
  uint16_t a_min1_ = 0xffff, a_max_ = 0;  ///< a's nonzero bf16 magnitudes: min(|x| - 1), max(|x|)
};

}  // namespace kern::cpu
