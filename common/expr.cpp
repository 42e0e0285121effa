// The closed expression language (SPEC §3): constructors, printing and
// checked u64 evaluation. Overflow and division by zero are errors.
#include "common/expr.h"

#include <limits>

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

Expr Expr::ceil_div(Expr lhs, uint64_t divisor) {
  Expr e;
  e.op = Op::kCeilDiv;
  e.value = divisor;
  e.lhs = std::make_shared<Expr>(std::move(lhs));
  return e;
}

Expr Expr::mul(Expr lhs, uint64_t factor) {
  Expr e;
  e.op = Op::kMul;
  e.value = factor;
  e.lhs = std::make_shared<Expr>(std::move(lhs));
  return e;
}

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

Result<uint64_t> evaluate(const Expr& e, SymbolLookup lookup, const void* ctx) {
  switch (e.op) {
    case Expr::Op::kConst: return e.value;
    case Expr::Op::kSym: {
      std::optional<uint64_t> v = lookup ? lookup(e.sym, ctx) : std::nullopt;
      if (!v) return make_error(ErrorKind::kManifest, "unknown symbol `" + e.sym + "`");
      return *v;
    }
    case Expr::Op::kCeilDiv:
    case Expr::Op::kMul: {
      if (!e.lhs) return make_error(ErrorKind::kManifest, "malformed expression `" + e.to_string() + "`");
      Result<uint64_t> lhs = evaluate(*e.lhs, lookup, ctx);
      if (!lhs.ok()) return lhs.error();
      if (e.op == Expr::Op::kMul) {
        auto r = checked_mul(*lhs, e.value);
        if (!r) {
          return make_error(ErrorKind::kManifest, e.to_string() + ": " + std::to_string(*lhs) + " * " +
                                                      std::to_string(e.value) + " overflows u64");
        }
        return *r;
      }
      auto r = checked_ceil_div(*lhs, e.value);
      if (!r) return make_error(ErrorKind::kManifest, e.to_string() + ": division by zero");
      return *r;
    }
  }
  return make_error(ErrorKind::kManifest, "malformed expression");
}

}  // namespace kern
