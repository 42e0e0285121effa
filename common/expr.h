// The closed scalar-expression language of manifest v2 (SPEC §3): a constant,
// `{"sym": s}`, `{"ceil_div": [e, c]}`, `{"mul": [e, c]}`. Never a language:
// no control flow, right operands are constants. The verifier evaluates it over
// symbol ranges and the loader over plan chains, both with the checked u64
// helpers below: overflow and division by zero are errors, never a wrap.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "common/result.h"
#include "common/source.h"

namespace kern {

/// One expression node. `kConst`: `value`; `kSym`: `sym` (a symbol name);
/// `kCeilDiv`/`kMul`: `lhs` op `value` (the right operand is a constant).
struct Expr {
  enum class Op : uint8_t { kConst, kSym, kCeilDiv, kMul };
  Op op = Op::kConst;
  uint64_t value = 0;          ///< constant, or the right operand of ceil_div/mul
  std::string sym;             ///< symbol name for kSym
  std::shared_ptr<Expr> lhs;   ///< left operand for kCeilDiv/kMul (never null there)
  SourceSpan span;             ///< where the expression was written

  static Expr constant(uint64_t v);
  static Expr symbol(std::string name);
  static Expr ceil_div(Expr lhs, uint64_t divisor);
  static Expr mul(Expr lhs, uint64_t factor);
  /// Manifest-like text, e.g. "ceil_div(mul(tokens, 32), 4)".
  std::string to_string() const;

 private:
  /// A kCeilDiv or kMul node: `lhs` op `literal`.
  static Expr with_literal(Op op, Expr lhs, uint64_t literal);
};

/// Checked u64 helpers shared by the verifier and the loader (nullopt on overflow).
std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b);
std::optional<uint64_t> checked_add(uint64_t a, uint64_t b);
/// ceil(a / b); nullopt when b == 0.
std::optional<uint64_t> checked_ceil_div(uint64_t a, uint64_t b);
/// `v` rounded up to a multiple of `align`; nullopt when `align` == 0 or the
/// result does not fit in u64.
std::optional<uint64_t> checked_round_up(uint64_t v, uint64_t align);

}  // namespace kern
