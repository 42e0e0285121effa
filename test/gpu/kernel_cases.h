// The CUDA-vs-cpu-reference comparison cases (test/gpu/run.sh): each case is
// a few host buffers with random contents plus one or more launches of
// docs/kernels.md kernels over them. The harness (gpu_compare.cpp) runs the
// launches on the cpu reference and on the GPU from identical starting bytes
// (outputs poisoned with 0xFF = NaN / -1) and compares every buffer marked for
// comparison, with the tolerance of its element type:
//   bf16: |gpu - cpu| <= 1e-3 + 2^-6 |cpu|  (two bf16 ulps: f32 summation order,
//         FMA contraction and __expf differ; one rounding each side)
//   f32 : |gpu - cpu| <= 1e-5 + 1e-4 |cpu|  (attention partials)
//   ints: exact (embedding ids, argmax indices)
// NaN equals NaN (a poisoned element both sides left alone). Rotated
// outputs (RoPE) take the bf16 tolerance relative to the rotated pair's
// magnitude hypot(x_i, x_partner), which the rotation preserves: an input
// rounding difference of one ulp of that magnitude stays one ulp of it when
// the rotation makes one element small (the rule relative to the element
// itself rejected a correct qk_norm_rope_cache neox T=8 result).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kern::gpu_test {

/// How a buffer is compared after the launches.
enum class Compare { kNone, kBf16, kF32, kExact };

/// One host buffer of a case (bytes; the element type only matters for Compare).
struct CaseBuffer {
  std::string name;
  std::vector<uint8_t> bytes;
  Compare compare = Compare::kNone;
  /// bf16 rows of `pair_row` elements holding heads of `pair_dim` elements
  /// rotated in pairs (i, i + dim/2) when pair_neox, else (2i, 2i + 1);
  /// elements past the last whole head of a row are unpaired. 0: no pairs.
  uint32_t pair_row = 0, pair_dim = 0;
  bool pair_neox = false;
};

/// One kernel parameter: a buffer (its device/host base + byte offset) or a
/// scalar value of `size` bytes (little-endian bits).
struct CaseArg {
  int buffer = -1;        ///< index into Case::buffers, or -1 for a scalar
  uint64_t offset = 0;    ///< bytes added to the buffer base
  uint64_t bits = 0;      ///< scalar value
  uint32_t size = 0;      ///< scalar size in bytes (4, 8 or 1)
};

/// One launch of a case.
struct CaseLaunch {
  std::string fatbin;  ///< file name under the kernels dir, e.g. "rmsnorm.fatbin"
  std::string symbol;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_mem = 0;  ///< dynamic shared memory bytes (below 48 KB: no opt-in)
  std::vector<CaseArg> args;
};

/// A comparison case; `bytes_moved` is the DRAM traffic its docs comment
/// states (for the benchmark's GB/s), `bench` marks Qwen3-4B shapes to time.
struct Case {
  std::string name;
  std::vector<CaseBuffer> buffers;
  std::vector<CaseLaunch> launches;
  double bytes_moved = 0;
  bool bench = false;
};

/// Every comparison case (several shapes per kernel, Qwen3-4B shapes marked
/// for benchmarking). Deterministic: the same seed gives the same bytes.
std::vector<Case> make_cases(uint64_t seed);

/// Scalar argument helpers.
CaseArg arg_i32(int32_t v);
CaseArg arg_i64(int64_t v);
CaseArg arg_f32(float v);
CaseArg arg_u8(uint8_t v);
CaseArg arg_buf(int buffer, uint64_t offset = 0);

}  // namespace kern::gpu_test
