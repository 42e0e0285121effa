// The per-tile argmax of kern_gemv_rmsnorm_argmax_bf16's epilogue (gemv.cpp,
// docs/kernels.md §11): for each 8-column tile of a row of bf16 logits, the
// greatest value and its column, the smallest column on ties, NaN never
// winning. A scalar scan and an AVX-512 path (two tiles per register) with
// the same results: the value is read back from the winning column, so even
// a -0 / +0 tie gives the scan's bits.
#pragma once

#include <cstdint>

namespace kern::cpu {

/// Columns per argmax tile (the CUDA kernel's block: grid.x = ceil(n / 8)).
inline constexpr int64_t kArgmaxTileCols = 8;

/// For tiles t in [t0, t1) of `row` (n bf16 logits, column 0 at row[0]):
/// val[t] = the greatest non-NaN logit of columns [8t, min(8t + 8, n)) as
/// f32 and idx[t] = its smallest column; (-inf, INT32_MAX) when the tile
/// has no non-NaN logit. Reads no column at or past n. `simd` false runs
/// the scalar scan (the test's reference for the AVX-512 path).
void tile_argmax_row(const uint16_t* row, int64_t n, int64_t t0, int64_t t1, float* val, int32_t* idx,
                     bool simd = true);

}  // namespace kern::cpu
