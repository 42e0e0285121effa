// The row-major extern GEMMs (SPEC §3, docs/kernels.md §10) as one
// column-major cublasLt call. Row-major C[m, n] = A[m, k] W[n, k]^T has the
// same bytes as column-major C^T (n x m, ld n); and C^T = W A^T where W's
// bytes are column-major k x n (ld k), used transposed, and A's bytes are
// column-major k x m (ld k), used as is. So cublasLt gets
//   matrix "A" = w (transa = T), matrix "B" = a (transb = N),
//   M = n, N = m, K = k, lda = k, ldb = k, ldc = ldd = n.
// Pure data: unit-tested by emulating the column-major call on the CPU and
// comparing with the cpu reference GEMM.
#pragma once

#include <cstdint>

namespace kern::load::cuda {

/// Which row-major operand a column-major slot reads.
enum class GemmOperand : uint8_t { kA, kW };

/// D = op(A) op(B) (+ C), column-major, dims and leading dims in elements.
struct ColumnMajorGemm {
  bool transa = false;  ///< op(A) = A^T
  bool transb = false;  ///< op(B) = B^T
  uint64_t m = 0, n = 0, k = 0;  ///< D is m x n, op(A) m x k, op(B) k x n
  uint64_t lda = 0, ldb = 0, ldc = 0;
  uint64_t a_rows = 0, a_cols = 0;  ///< stored (untransposed) shape of A
  uint64_t b_rows = 0, b_cols = 0;  ///< stored shape of B
  GemmOperand a_operand = GemmOperand::kW;  ///< which row-major input feeds A
  GemmOperand b_operand = GemmOperand::kA;
};

/// The column-major call for row-major c[m, n] = a[m, k] w[n, k]^T
/// (`extern:cublaslt_bf16_tn`; the `_acc` variant is the same with beta = 1).
ColumnMajorGemm map_row_major_tn(uint64_t m, uint64_t n, uint64_t k);

/// The alignment cublasLt may assume for a buffer at device address `ptr`
/// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES, default 256): the largest
/// power of two dividing it, at most 256 (0: 256). Bytes.
inline uint32_t gemm_pointer_alignment(uint64_t ptr) {
  const uint64_t low = ptr & (~ptr + 1);  // lowest set bit
  return (ptr == 0 || low >= 256) ? 256u : static_cast<uint32_t>(low);
}

}  // namespace kern::load::cuda
