// The runtime built-ins a step may name as `extern:<op>` (SPEC §3,
// docs/kernels.md §10) with their exact parameter ABIs. kern-load registers
// an implementation for each; the verifier rejects any other name.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "common/dtype.h"

namespace kern::verify {

/// One built-in: its full symbol ("extern:cublaslt_bf16_tn") and params.
struct ExternOp {
  std::string_view symbol;
  std::vector<ParamType> params;
};

/// Every known extern op, in a stable order.
std::span<const ExternOp> extern_ops();
/// The op named `symbol` (including the "extern:" prefix); nullptr if unknown.
const ExternOp* find_extern_op(std::string_view symbol);

}  // namespace kern::verify
