// Row-major -> column-major GEMM mapping (gemm_mapping.h).
#include "kern-load/cuda/gemm_mapping.h"

namespace kern::load::cuda {

ColumnMajorGemm map_row_major_tn(uint64_t m, uint64_t n, uint64_t k) {
  ColumnMajorGemm g;
  g.transa = true;  // w bytes = col-major k x n; op(A) = its transpose, n x k
  g.transb = false;
  g.m = n;
  g.n = m;
  g.k = k;
  g.a_rows = k, g.a_cols = n, g.lda = k;
  g.b_rows = k, g.b_cols = m, g.ldb = k;
  g.ldc = n;
  g.a_operand = GemmOperand::kW;
  g.b_operand = GemmOperand::kA;
  return g;
}

}  // namespace kern::load::cuda
