// The checks and texts shared by kern-verify's plan dumps (plan_view.h).
#include "kern-verify/plan_view.h"

#include "common/dtype.h"
#include "common/plan_checksum.h"
#include "common/plan_enums.h"

namespace kern::verify {

namespace fb = flatbuffers;

Result<const plan::Plan*> checked_plan(std::span<const uint8_t> bytes) {
  auto bad = [](const std::string& why) { return make_error(ErrorKind::kManifest, "not a valid plan: " + why); };
  if (bytes.size() < 8) return bad("file is " + std::to_string(bytes.size()) + " bytes, too short");
  // A finished FlatBuffers buffer is padded to its largest alignment, at
  // least 4 (the root uoffset); another size means a truncated file even
  // when only padding was lost (the Verifier never reads padding).
  if (bytes.size() % 4 != 0) {
    return bad("file is " + std::to_string(bytes.size()) + " bytes, not a multiple of 4 (truncated?)");
  }
  if (!plan::PlanBufferHasIdentifier(bytes.data())) {
    return bad("file identifier is not \"" + std::string(kPlanFileIdentifier) + "\"");
  }
  // The version before the full Verifier: a plan of another version may not pass it.
  if (auto version = shallow_plan_format_version(bytes); version && *version != kPlanFormatVersion) {
    return bad("format version " + std::to_string(*version) + " (this kern-verify reads " +
               std::to_string(kPlanFormatVersion) + ")");
  }
  if (bytes.size() > FLATBUFFERS_MAX_BUFFER_SIZE) {
    return bad("file is " + std::to_string(bytes.size()) + " bytes, larger than a FlatBuffers buffer can be");
  }
  // The checksum before the FlatBuffers body is read (common/plan_checksum.h).
  auto body = check_plan_trailer(bytes, "");
  if (!body.ok()) return bad(body.error().message);
  bytes = *body;
  fb::Verifier verifier(bytes.data(), bytes.size());
  if (!plan::VerifyPlanBuffer(verifier)) return bad("FlatBuffers verification failed (corrupt or truncated)");
  return plan::GetPlan(bytes.data());
}

std::string plan_name(const fb::String* s) { return s ? s->str() : std::string("?"); }

std::string plan_dtype_text(plan::DType d) {
  return static_cast<uint8_t>(d) <= static_cast<uint8_t>(plan::DType::MAX) ? std::string(dtype_name(from_plan(d)))
                                                                           : "dtype#" + std::to_string(static_cast<int>(d));
}

std::string plan_expr_text(const plan::Plan& p, const plan::Expr* e) {
  if (e == nullptr || e->nodes() == nullptr || e->nodes()->size() == 0) return "<empty>";
  // The FlatBuffers Verifier does not check that 8-byte structs are aligned.
  if (reinterpret_cast<uintptr_t>(e->nodes()->Data()) % alignof(plan::ExprNode) != 0) return "<misaligned>";
  auto symbol_name = [&p](uint64_t i) {
    return i < p.symbols()->size() ? plan_name(p.symbols()->Get(static_cast<fb::uoffset_t>(i))->name())
                                   : "sym#" + std::to_string(i);
  };
  std::string s;
  for (fb::uoffset_t i = 0; i < e->nodes()->size(); ++i) {
    const plan::ExprNode* n = e->nodes()->Get(i);
    switch (n->op()) {
      case plan::ExprOp::const_: s = std::to_string(n->operand()); break;
      case plan::ExprOp::sym: s = symbol_name(n->operand()); break;
      case plan::ExprOp::ceil_div: s = "ceil_div(" + s + ", " + std::to_string(n->operand()) + ")"; break;
      case plan::ExprOp::mul: s = "mul(" + s + ", " + std::to_string(n->operand()) + ")"; break;
      default: s = "<op " + std::to_string(static_cast<int>(n->op())) + ">"; break;
    }
  }
  return s;
}

}  // namespace kern::verify
