// The closed expression language (SPEC §3): constructors and printing, and
// the checked u64 arithmetic the verifier and the loader evaluate it with.
#include "common/expr.h"

namespace kern {

Expr Expr::constant(uint64_t v) {
  Expr e;
  e.op = Op::kConst;
  e.value = v;
  return e;
}

Expr Expr::symbol(std::string name) {
  Expr e;
  e.op = Op::kSym;
  e.sym = std::move(name);
  return e;
}

Expr Expr::with_literal(Op op, Expr lhs, uint64_t literal) {
  Expr e;
  e.op = op;
  e.value = literal;
  e.lhs = std::make_shared<Expr>(std::move(lhs));
  return e;
}

Expr Expr::ceil_div(Expr lhs, uint64_t divisor) { return with_literal(Op::kCeilDiv, std::move(lhs), divisor); }

Expr Expr::mul(Expr lhs, uint64_t factor) { return with_literal(Op::kMul, std::move(lhs), factor); }

std::string Expr::to_string() const {
  switch (op) {
    case Op::kConst: return std::to_string(value);
    case Op::kSym: return sym;
    case Op::kCeilDiv: return "ceil_div(" + (lhs ? lhs->to_string() : "?") + ", " + std::to_string(value) + ")";
    case Op::kMul: return "mul(" + (lhs ? lhs->to_string() : "?") + ", " + std::to_string(value) + ")";
  }
  return "?";
}

std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<uint64_t> checked_ceil_div(uint64_t a, uint64_t b) {
  if (b == 0) return std::nullopt;
  // a / b + (a % b != 0) never overflows, unlike (a + b - 1) / b.
  return a / b + (a % b != 0 ? 1 : 0);
}

std::optional<uint64_t> checked_round_up(uint64_t v, uint64_t align) {
  auto blocks = checked_ceil_div(v, align);
  return blocks ? checked_mul(*blocks, align) : std::nullopt;
}

}  // namespace kern
