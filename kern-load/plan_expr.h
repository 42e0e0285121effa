// Expression chains of the .kplan (schemas/plan.fbs `Expr`): checking their
// shape, evaluating them against symbol values, printing them. A chain is a
// const_/sym head followed by ceil_div/mul links (SPEC §3 expressions are
// always `e op constant`). Evaluation is checked u64 arithmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/plan_format.h"
#include "common/result.h"

namespace kern::load {

/// Checks that `e` is a well-formed chain: at least one node; the first is
/// const_ or sym with a symbol index < `num_symbols`; every further node is
/// ceil_div (operand != 0) or mul; every op is a known enum value. Returns a
/// lower-case reason ("node 0 is ceil_div, expected const or sym"), or
/// nullopt when well-formed.
std::optional<std::string> expr_chain_problem(const plan::Expr& e, size_t num_symbols);

/// Evaluates a well-formed chain (checked with expr_chain_problem first) at
/// `symbol_values` (indexed like Plan.symbols). nullopt on u64 overflow.
std::optional<uint64_t> evaluate_chain(const plan::Expr& e, std::span<const uint64_t> symbol_values);

/// Evaluates a well-formed chain with every symbol at its maximum (Symbol.max).
std::optional<uint64_t> evaluate_chain_at_max(const plan::Expr& e, const plan::Plan& p);

/// Manifest-like text of a chain for messages, e.g. "ceil_div(tokens, 4)".
/// Symbols are printed by name when `p` has them, else as "sym#N".
std::string chain_to_string(const plan::Expr& e, const plan::Plan& p);

/// Size in bytes of one element of `d` (bf16 2, f32 4, fp8e4m3 1, ...).
uint32_t plan_dtype_size(plan::DType d);
/// Manifest spelling of a plan dtype ("bf16", "i64", ...).
std::string plan_dtype_name(plan::DType d);
/// Size in bytes of a param's value in kernelParams: 4 for i32/u32/f32,
/// 8 for i64 and pointers, 1 for u8 (docs/kernels.md).
uint32_t plan_param_size(const plan::Param& p);
/// Whether a param is passed as a device pointer (ptr or buffer).
inline bool plan_param_is_pointer(const plan::Param& p) {
  return p.kind() == plan::ParamKind::ptr || p.kind() == plan::ParamKind::buffer;
}

}  // namespace kern::load
