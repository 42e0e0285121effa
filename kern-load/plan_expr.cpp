// Expression chains of the .kplan: checked, evaluated, printed (plan_expr.h).
#include "kern-load/plan_expr.h"

#include <cstdint>

#include "common/dtype.h"
#include "common/expr.h"
#include "common/plan_enums.h"

namespace kern::load {

namespace {
std::string op_name(plan::ExprOp op) {
  switch (op) {
    case plan::ExprOp::const_: return "const";
    case plan::ExprOp::sym: return "sym";
    case plan::ExprOp::ceil_div: return "ceil_div";
    case plan::ExprOp::mul: return "mul";
  }
  return "op#" + std::to_string(static_cast<int>(op));
}

template <typename SymbolValue>
std::optional<uint64_t> evaluate_with(const plan::Expr& e, SymbolValue symbol_value) {
  const auto* nodes = e.nodes();
  uint64_t v = 0;
  for (flatbuffers::uoffset_t i = 0; i < nodes->size(); ++i) {
    const plan::ExprNode* n = nodes->Get(i);
    switch (n->op()) {
      case plan::ExprOp::const_: v = n->operand(); break;
      case plan::ExprOp::sym: v = symbol_value(n->operand()); break;
      case plan::ExprOp::ceil_div: {
        auto r = checked_ceil_div(v, n->operand());
        if (!r) return std::nullopt;
        v = *r;
        break;
      }
      case plan::ExprOp::mul: {
        auto r = checked_mul(v, n->operand());
        if (!r) return std::nullopt;
        v = *r;
        break;
      }
    }
  }
  return v;
}
}  // namespace

std::optional<std::string> expr_chain_problem(const plan::Expr& e, size_t num_symbols) {
  const auto* nodes = e.nodes();
  if (nodes == nullptr || nodes->size() == 0) return std::string("empty expression");
  // flatbuffers::Verifier checks a vector's 4-byte length field, not that its
  // 8-byte ExprNode structs are aligned: a hostile file could make every read
  // below misaligned (UB; found by test/fuzz plan_fuzz). Builders align them.
  if (reinterpret_cast<uintptr_t>(nodes->Data()) % alignof(plan::ExprNode) != 0)
    return std::string("expression nodes are not 8-byte aligned");
  for (flatbuffers::uoffset_t i = 0; i < nodes->size(); ++i) {
    const plan::ExprNode* n = nodes->Get(i);
    auto op = n->op();
    if (static_cast<uint8_t>(op) > static_cast<uint8_t>(plan::ExprOp::MAX))
      return "node " + std::to_string(i) + " has unknown op " + std::to_string(static_cast<int>(op));
    bool head = op == plan::ExprOp::const_ || op == plan::ExprOp::sym;
    if (i == 0 && !head)
      return "node 0 is " + op_name(op) + ", expected const or sym";
    if (i > 0 && head)
      return "node " + std::to_string(i) + " is " + op_name(op) + ", expected ceil_div or mul";
    if (op == plan::ExprOp::sym && n->operand() >= num_symbols)
      return "symbol index " + std::to_string(n->operand()) + " out of range (" +
             std::to_string(num_symbols) + " symbols)";
    if (op == plan::ExprOp::ceil_div && n->operand() == 0)
      return "node " + std::to_string(i) + " divides by zero";
  }
  return std::nullopt;
}

std::optional<uint64_t> evaluate_chain(const plan::Expr& e, std::span<const uint64_t> symbol_values) {
  return evaluate_with(e, [&](uint64_t s) { return symbol_values[s]; });
}

std::optional<uint64_t> evaluate_chain_at_max(const plan::Expr& e, const plan::Plan& p) {
  return evaluate_with(e, [&](uint64_t s) { return p.symbols()->Get(static_cast<flatbuffers::uoffset_t>(s))->max(); });
}

std::string chain_to_string(const plan::Expr& e, const plan::Plan& p) {
  const auto* nodes = e.nodes();
  if (nodes == nullptr) return "<empty>";
  std::string s;
  for (flatbuffers::uoffset_t i = 0; i < nodes->size(); ++i) {
    const plan::ExprNode* n = nodes->Get(i);
    switch (n->op()) {
      case plan::ExprOp::const_: s = std::to_string(n->operand()); break;
      case plan::ExprOp::sym:
        if (p.symbols() != nullptr && n->operand() < p.symbols()->size())
          s = p.symbols()->Get(static_cast<flatbuffers::uoffset_t>(n->operand()))->name()->str();
        else
          s = "sym#" + std::to_string(n->operand());
        break;
      default: s = op_name(n->op()) + "(" + s + ", " + std::to_string(n->operand()) + ")"; break;
    }
  }
  return s;
}

uint32_t plan_dtype_size(plan::DType d) { return dtype_size_bytes(from_plan(d)); }

std::string plan_dtype_name(plan::DType d) {
  if (static_cast<uint8_t>(d) > static_cast<uint8_t>(plan::DType::MAX))
    return "dtype#" + std::to_string(static_cast<int>(d));
  return std::string(dtype_name(from_plan(d)));
}

uint32_t plan_param_size(const plan::Param& p) {
  switch (p.kind()) {
    case plan::ParamKind::i32:
    case plan::ParamKind::u32:
    case plan::ParamKind::f32: return 4;
    case plan::ParamKind::u8: return 1;
    case plan::ParamKind::i64:
    case plan::ParamKind::ptr:
    case plan::ParamKind::buffer: return 8;
  }
  return 8;
}

}  // namespace kern::load
