// The decode GEMV twins' dot products (kernels-src/cpu/gemv.cpp) in the CUDA
// kernel's exact operation order, for all m a rows of a launch from one read
// of each w row, vectorised across the kernel's 32 lanes:
//   * a split's 8-element groups g = gb + l + 32 t go to lane l; each lane
//     accumulates its groups' elements in order with one fma per element;
//   * the 32 lane sums are combined by the xor butterfly (16, 8, 4, 2, 1);
//   * the caller adds the splits in order 0, 1, ...
// A SIMD register holds consecutive lanes (8 or 16 of them), so every lane's
// chain of fmas is the scalar one and the butterfly is the usual halving
// horizontal sum; the w groups are transposed in registers (16-bit pairs,
// widened by a shift or a mask) so that w is read once, in order, for every
// a row. fma is exactly rounded, so all paths give identical bits; the
// portable path (GemvIsa::kPortable) is the scalar statement of the order.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace kern::cpu {

/// The instruction sets the lane-order dots have a path for. kAvx512Bf16 is
/// kAvx512 plus, for m = 2..8 with a rows of bf16 values, AVX512_BF16's
/// vdpbf16ps for two of a lane's fmas at once: the same bits whenever its
/// flushing of denormals cannot act, which each call checks from the
/// magnitudes it reads (and, where it could, runs the rows again by kAvx512).
enum class GemvIsa { kPortable, kAvx2, kAvx512, kAvx512Bf16 };

/// Whether this machine can run `isa` (cpuid; kPortable always).
bool gemv_isa_supported(GemvIsa isa);

/// Whether vdpbf16ps gives the two fmas' bits (elements 2d + 1, then 2d) for
/// every product of an a value and a w value whose nonzero bf16 magnitudes
/// (bits & 0x7fff) lie in [a_min1 + 1, a_max] and [w_min1 + 1, w_max]
/// (a_min1 / w_min1 = 0xffff: none is nonzero): no inf or NaN, no denormal
/// input, every nonzero product in [2^-103, 2^126), so that neither its
/// denormal flushing nor an overflow of one product can act. False off x86.
bool vdpbf16ps_exact(uint16_t a_min1, uint16_t a_max, uint16_t w_min1, uint16_t w_max);

/// The fastest supported GemvIsa (kAvx512Bf16 > kAvx512 > kAvx2 > kPortable).
GemvIsa gemv_best_isa();

/// "portable", "avx2", "avx512" or "avx512-bf16".
const char* gemv_isa_name(GemvIsa isa);

/// The a rows of one GEMV launch laid out for the lane-order dots: per split,
/// each a row's 32-group blocks in [block][element 0..7][lane 0..31] order
/// (the operand of lane l at step e sits at lane l), a partial last group
/// read from the row-major rows.
class GemvLaneDots {
 public:
  /// a: m rows of k f32 (row stride k, kept by reference: it must outlive
  /// this object), 1 <= m <= 8; the k axis is cut into `splits` (>= 1) ranges of
  /// ceil(ceil(k / 8) / splits) groups as the CUDA kernel does. `isa` must be
  /// supported (gemv_isa_supported); an unsupported one runs kPortable.
  GemvLaneDots(const float* a, int64_t m, int64_t k, int64_t splits, GemvIsa isa);

  /// The same, with the a rows written as they are laid out: fill(i) is
  /// called once for each row i < m, just before row i of `a` is read, and
  /// must write that row (and nothing another row's fill reads); the rows
  /// (fill, then the layout) run on `threads` threads (run_ranges; 0 or 1:
  /// the calling thread), so a launch's RMSNorm prologue runs beside its
  /// layout. An exception from fill is rethrown here (run_ranges).
  GemvLaneDots(const float* a, int64_t m, int64_t k, int64_t splits, GemvIsa isa, unsigned threads,
               const std::function<void(int64_t)>& fill);

  /// out[(r * splits + s) * m + i] = split s's sum of a row i . w row r,
  /// for r < rows, s < splits and i < m, each in the CUDA kernel's order (w:
  /// `rows` rows of k bf16 bits, row stride k). Split by split, so the a
  /// blocks in use (m * k / splits floats) stay in the L1 cache.
  /// `readable_rows` (>= rows; default rows) is how many rows from w the
  /// caller holds: the AVX-512 path prefetches up to that many, so a caller
  /// walking a long w in calls of a few rows (gemv.cpp, 32 at a time) gets
  /// the next call's first rows prefetched too (clamped at `rows`, each
  /// call's first rows were demand misses: about 10% of an m = 8 GEMV,
  /// bench/results/kern-run-batch-cpu.md).
  void dots(const uint16_t* w, int64_t rows, float* out, int64_t readable_rows = 0) const;

  /// dots() from w packed in the lane order (gemv_packed.h, pack_gemv_rows
  /// with this launch's k and splits; k a multiple of 8): `wp` the packed
  /// row 0 of `rows` (row stride k), `readable_rows` as dots(), and
  /// [w_min1 + 1, w_max] the packed matrix's bf16 magnitude range
  /// (PackedGemvW), which decides whether the AVX512_BF16 path's vdpbf16ps
  /// gives the fma bits for the whole call (vdpbf16ps_exact). The same bits
  /// as dots() on the row-major w, from a load, a mask and a shift per 64
  /// bytes of w (or one vdpbf16ps) instead of a transposition.
  void dots_packed(const uint16_t* wp, int64_t rows, float* out, int64_t readable_rows, uint16_t w_min1,
                   uint16_t w_max) const;

 private:
  /// One split's groups [gb, ge): `full` complete 32-group blocks from gb,
  /// then `part` (< 32) whole groups (no element at or past k), then at most
  /// one partial group; a row i's blocks (the partial one zero-padded) at
  /// lane_a_[offset + i * blocks * 256].
  struct Split {
    int64_t gb = 0, ge = 0, full = 0, part = 0, offset = 0;
  };
  const float* a_;
  int64_t m_, k_;
  GemvIsa isa_;
  std::vector<Split> splits_;
  std::unique_ptr<float[]> lane_a_;
  /// lane_a_ as bf16 pairs, [block][dword d 0..3][lane 0..31] (elements 2d
  /// and 2d + 1 in the high and low half, the order vdpbf16ps takes them),
  /// when an AVX-512 pair path runs (kAvx512 above m = 4, kAvx512Bf16 at
  /// any m: dots_packed's bf16 path at m = 1) and every a value is a bf16;
  /// null otherwise.
  std::unique_ptr<uint32_t[]> pairs_;
  /// Over the pairs' nonzero a values, min(|x| - 1) and max(|x|) of their
  /// bf16 magnitudes (bits & 0x7fff; 0xffff and 0 when none or no pairs).
  uint16_t a_min1_ = 0xffff, a_max_ = 0;
  /// Set once the bf16 path cannot give the fma bits for this launch (its a
  /// values, or a call's w): the calls after it take the fma path at once.
  mutable std::atomic<bool> bf16_off_{false};
};

}  // namespace kern::cpu
