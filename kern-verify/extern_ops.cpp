// Extern op table (docs/kernels.md §10). GEMMs are row-major
// C[m, n] = A[m, k] @ W[n, k]^T with f32 accumulation; `_acc` adds into C.
#include "kern-verify/extern_ops.h"

namespace kern::verify {
namespace {

ParamType buf(Access a) { return ParamType{ParamKind::kBuffer, a, DType::kBf16}; }
ParamType i32() { return ParamType{ParamKind::kI32, Access::kIn, DType::kBf16}; }

const std::vector<ExternOp>& table() {
  static const std::vector<ExternOp> ops = {
      {"extern:cublaslt_bf16_tn",
       {buf(Access::kIn), buf(Access::kIn), buf(Access::kOut), i32(), i32(), i32()}},
      {"extern:cublaslt_bf16_tn_acc",
       {buf(Access::kIn), buf(Access::kIn), buf(Access::kInOut), i32(), i32(), i32()}},
  };
  return ops;
}

}  // namespace

std::span<const ExternOp> extern_ops() { return table(); }

const ExternOp* find_extern_op(std::string_view symbol) {
  for (const ExternOp& op : table()) {
    if (op.symbol == symbol) return &op;
  }
  return nullptr;
}

}  // namespace kern::verify
