// The runtime built-ins a step may name as `extern:<op>` (SPEC §3,
// docs/kernels.md §10): the one table of their names, parameter ABIs and
// meanings. The verifier checks steps against it and prints it in help, the
// lowering and both devices resolve names through it (the cpu registry, the
// cuda device's cublasLt path); no other source file spells an op's name.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/dtype.h"

namespace kern {

/// The prefix that marks a step symbol as a runtime built-in, not a kernel
/// in a cubin.
inline constexpr std::string_view kExternPrefix = "extern:";

/// Which built-in a step names. kNone: not a built-in.
enum class ExternOpId : uint8_t { kNone, kGemmBf16Tn, kGemmBf16TnAcc };

/// One built-in: its full symbol, its exact parameter ABI (what a step's
/// `params` must equal) and what it computes. The GEMMs are row-major
/// C[m, n] = A[m, k] @ W[n, k]^T with f32 accumulation; `_acc` adds into C.
struct ExternOpInfo {
  ExternOpId id = ExternOpId::kNone;
  std::string_view symbol;             ///< e.g. "extern:cublaslt_bf16_tn"
  std::array<ParamType, 6> params{};   ///< a, w, c pointers, then i32 m, n, k
  std::string_view description;        ///< one line, for help and docs
};

namespace detail {
inline constexpr ParamType extern_buf(Access a) { return ParamType{ParamKind::kBuffer, a, DType::kBf16}; }
inline constexpr ParamType kExternI32{ParamKind::kI32, Access::kIn, DType::kBf16};
}  // namespace detail

/// Every built-in, in a stable order.
inline constexpr std::array<ExternOpInfo, 2> kExternOps = {{
    {ExternOpId::kGemmBf16Tn,
     "extern:cublaslt_bf16_tn",
     {detail::extern_buf(Access::kIn), detail::extern_buf(Access::kIn), detail::extern_buf(Access::kOut),
      detail::kExternI32, detail::kExternI32, detail::kExternI32},
     "c[m, n] = bf16(a[m, k] . w[n, k]^T), f32 accumulation"},
    {ExternOpId::kGemmBf16TnAcc,
     "extern:cublaslt_bf16_tn_acc",
     {detail::extern_buf(Access::kIn), detail::extern_buf(Access::kIn), detail::extern_buf(Access::kInOut),
      detail::kExternI32, detail::kExternI32, detail::kExternI32},
     "c[m, n] = bf16(c + a[m, k] . w[n, k]^T), f32 accumulation"},
}};

/// True when `symbol` starts with "extern:" (known op or not).
constexpr bool is_extern_symbol(std::string_view symbol) { return symbol.substr(0, kExternPrefix.size()) == kExternPrefix; }

/// The full symbol of built-in `id` ("" for kNone).
constexpr std::string_view extern_op_symbol(ExternOpId id) {
  for (const ExternOpInfo& op : kExternOps)
    if (op.id == id) return op.symbol;
  return {};
}

/// The built-in named `symbol` ("extern:" included); nullptr if none is.
const ExternOpInfo* find_extern_op(std::string_view symbol);

/// "extern:a, extern:b": every built-in's symbol, for help lines.
std::string extern_op_list();

/// "in buffer<bf16>, in buffer<bf16>, out buffer<bf16>, i32, i32, i32": the
/// ABI of `op` in manifest spelling.
std::string extern_op_params_text(const ExternOpInfo& op);

/// True when `params` equals the ABI of `op` exactly (ParamType equality).
bool extern_op_params_match(const ExternOpInfo& op, std::span<const ParamType> params);

}  // namespace kern
