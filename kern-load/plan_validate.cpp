// Cross-reference checks on a plan the FlatBuffers Verifier accepted (plan_validate.h).
#include "kern-load/plan_validate.h"

#include <string>

#include "common/arena_check.h"
#include "common/expr.h"
#include "kern-load/plan_expr.h"

namespace kern::load {

namespace {

using flatbuffers::uoffset_t;

Error bad(const std::string& where, const std::string& what) {
  return make_error(ErrorKind::kManifest, where + ": " + what);
}

std::string at(const char* table, uoffset_t i) {
  return std::string(table) + "[" + std::to_string(i) + "]";
}

std::string out_of_range(const char* what, uint64_t index, uint64_t count, const char* noun) {
  return std::string(what) + " index " + std::to_string(index) + " out of range (" +
         std::to_string(count) + " " + noun + ")";
}

std::string hex64(uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = digits[v & 15];
  return s;
}

template <typename E>
bool enum_known(E v) {
  return static_cast<uint8_t>(v) <= static_cast<uint8_t>(E::MAX);
}

Status check_expr(const plan::Expr* e, const plan::Plan& p, const std::string& where) {
  if (e == nullptr) return bad(where, "missing expression");
  if (auto problem = expr_chain_problem(*e, p.symbols()->size())) return bad(where, *problem);
  return {};
}

Status check_param(const plan::Param& prm, const std::string& where) {
  if (!enum_known(prm.kind()))
    return bad(where, "unknown param kind " + std::to_string(static_cast<int>(prm.kind())));
  if (!enum_known(prm.access()))
    return bad(where, "unknown access " + std::to_string(static_cast<int>(prm.access())));
  if (!enum_known(prm.dtype()))
    return bad(where, "unknown dtype " + std::to_string(static_cast<int>(prm.dtype())));
  return {};
}

/// Shape dims are single-node const/sym chains; the byte size at the maxima
/// must equal the recorded max_size_bytes (what the loader allocates).
Status check_shape(const flatbuffers::Vector<flatbuffers::Offset<plan::Expr>>& shape, plan::DType dtype,
                   uint64_t max_size_bytes, const plan::Plan& p, const std::string& where) {
  if (!enum_known(dtype)) return bad(where, "unknown dtype " + std::to_string(static_cast<int>(dtype)));
  uint64_t bytes = plan_dtype_size(dtype);
  for (uoffset_t d = 0; d < shape.size(); ++d) {
    std::string dim_where = where + ".shape[" + std::to_string(d) + "]";
    KERN_RETURN_IF_ERROR(check_expr(shape.Get(d), p, dim_where));
    if (shape.Get(d)->nodes()->size() != 1) return bad(dim_where, "a dimension must be one constant or symbol");
    auto dim = evaluate_chain_at_max(*shape.Get(d), p);
    auto next = dim ? checked_mul(bytes, *dim) : std::nullopt;
    if (!next) return bad(where, "byte size overflows u64 at the symbols' maxima");
    bytes = *next;
  }
  if (bytes != max_size_bytes)
    return bad(where, "max_size_bytes " + std::to_string(max_size_bytes) + " B does not match its shape (" +
                          std::to_string(bytes) + " B at the symbols' maxima)");
  return {};
}

Status check_tables(const plan::Plan& p) {
  for (uoffset_t i = 0; i < p.symbols()->size(); ++i) {
    const auto* s = p.symbols()->Get(i);
    if (s->min() > s->max())
      return bad(at("symbols", i) + " '" + s->name()->str() + "'",
                 "min " + std::to_string(s->min()) + " > max " + std::to_string(s->max()));
  }
  for (uoffset_t i = 0; i < p.states()->size(); ++i) {
    const auto* s = p.states()->Get(i);
    if (s->align() == 0 || (s->align() & (s->align() - 1)) != 0)
      return bad(at("states", i) + " '" + s->name()->str() + "'",
                 "align " + std::to_string(s->align()) + " is not a power of two");
    // Rounding a size up to a larger alignment could wrap u64, and no
    // device allocates at such an alignment: a clear error, not "out of memory".
    if (s->align() > kMaxStateAlign)
      return bad(at("states", i) + " '" + s->name()->str() + "'",
                 "align " + std::to_string(s->align()) + " B exceeds the loader's limit of " +
                     std::to_string(kMaxStateAlign) + " B");
  }
  for (uoffset_t i = 0; i < p.buffers()->size(); ++i) {
    const auto* b = p.buffers()->Get(i);
    std::string where = at("buffers", i) + " '" + b->name()->str() + "'";
    if (!enum_known(b->class_()))
      return bad(where, "unknown buffer class " + std::to_string(static_cast<int>(b->class_())));
    KERN_RETURN_IF_ERROR(check_shape(*b->shape(), b->dtype(), b->max_size_bytes(), p, where));
  }
  for (uoffset_t i = 0; i < p.cubins()->size(); ++i) {
    const auto* c = p.cubins()->Get(i);
    std::string where = at("cubins", i);
    if (c->sha256() != nullptr && c->sha256()->size() != 32)
      return bad(where, "sha256 has " + std::to_string(c->sha256()->size()) + " bytes, expected 32");
    std::string path = c->path()->str();
    if (path.empty() || path[0] == '/' || path == ".." || path.rfind("../", 0) == 0 ||
        path.find("/../") != std::string::npos || path.ends_with("/.."))
      return bad(where, "path '" + path + "' must be relative to the kernels directory without '..'");
  }
  const uoffset_t num_steps = p.steps()->size();
  const uoffset_t num_kernels = p.kernels()->size();
  for (uoffset_t i = 0; i < num_kernels; ++i) {
    const auto* k = p.kernels()->Get(i);
    std::string where = at("kernels", i) + " '" + k->name()->str() + "'";
    for (uoffset_t j = 0; j < k->params()->size(); ++j)
      KERN_RETURN_IF_ERROR(check_param(*k->params()->Get(j), where + ".params[" + std::to_string(j) + "]"));
    for (uoffset_t j = 0; j < k->steps()->size(); ++j)
      if (k->steps()->Get(j) >= num_steps)
        return bad(where + ".steps[" + std::to_string(j) + "]",
                   out_of_range("step", k->steps()->Get(j), num_steps, "steps"));
  }
  for (uoffset_t i = 0; i < num_steps; ++i) {
    const auto* s = p.steps()->Get(i);
    std::string where = at("steps", i) + " '" + s->symbol()->str() + "'";
    if (s->kernel() >= num_kernels) return bad(where, out_of_range("kernel", s->kernel(), num_kernels, "kernels"));
    if (s->cubin() < -1 || s->cubin() >= static_cast<int64_t>(p.cubins()->size()))
      return bad(where, "cubin index " + std::to_string(s->cubin()) + " out of range (" +
                            std::to_string(p.cubins()->size()) + " cubins)");
    for (uoffset_t j = 0; j < s->params()->size(); ++j)
      KERN_RETURN_IF_ERROR(check_param(*s->params()->Get(j), where + ".params[" + std::to_string(j) + "]"));
    if (s->block_x() == 0 || s->block_y() == 0 || s->block_z() == 0) return bad(where, "block has a zero dimension");
    KERN_RETURN_IF_ERROR(check_expr(s->grid_x(), p, where + ".grid_x"));
    KERN_RETURN_IF_ERROR(check_expr(s->grid_y(), p, where + ".grid_y"));
    KERN_RETURN_IF_ERROR(check_expr(s->grid_z(), p, where + ".grid_z"));
    if (s->shared_mem() != nullptr) KERN_RETURN_IF_ERROR(check_expr(s->shared_mem(), p, where + ".shared_mem"));
  }
  for (uoffset_t i = 0; i < p.scratch()->size(); ++i) {
    const auto* s = p.scratch()->Get(i);
    std::string where = at("scratch", i) + " '" + s->name()->str() + "'";
    if (s->kernel() >= num_kernels) return bad(where, out_of_range("kernel", s->kernel(), num_kernels, "kernels"));
    KERN_RETURN_IF_ERROR(check_shape(*s->shape(), s->dtype(), s->max_size_bytes(), p, where));
  }
  return {};
}

Status check_arg(const plan::LaunchArg& a, const plan::Param& prm, const plan::Step& step, const plan::Plan& p,
                 const std::string& where) {
  if (!enum_known(a.kind())) return bad(where, "unknown arg kind " + std::to_string(static_cast<int>(a.kind())));
  bool pointer_arg = a.kind() == plan::ArgKind::buffer || a.kind() == plan::ArgKind::state ||
                     a.kind() == plan::ArgKind::scratch;
  if (pointer_arg != plan_param_is_pointer(prm))
    return bad(where, pointer_arg ? "a pointer argument for a scalar param" : "a scalar argument for a pointer param");
  // A typed pointer's offset is a whole number of elements (kern-verify
  // E-rule); a misaligned one would make every element access straddle two.
  if (pointer_arg && prm.kind() == plan::ParamKind::buffer) {
    const uint64_t elem = plan_dtype_size(prm.dtype());
    if (a.offset() % elem != 0)
      return bad(where, "offset " + std::to_string(a.offset()) + " B is not a multiple of the element size " +
                            std::to_string(elem) + " B of the param's dtype");
  }
  switch (a.kind()) {
    case plan::ArgKind::buffer: {
      if (a.index() >= p.buffers()->size())
        return bad(where, out_of_range("buffer", a.index(), p.buffers()->size(), "buffers"));
      const auto* b = p.buffers()->Get(a.index());
      // At the size itself no byte is left to point at: past the end, as
      // kern-verify's E0148 says (offset >= size).
      if (a.offset() >= b->max_size_bytes())
        return bad(where, "offset " + std::to_string(a.offset()) + " B is past the end of buffer '" +
                              b->name()->str() + "' (" + std::to_string(b->max_size_bytes()) + " B)");
      break;
    }
    case plan::ArgKind::state:
      // The state's size depends on the capacity: its offset is checked at allocation.
      if (a.index() >= p.states()->size())
        return bad(where, out_of_range("state", a.index(), p.states()->size(), "states"));
      break;
    case plan::ArgKind::scratch: {
      if (a.index() >= p.scratch()->size())
        return bad(where, out_of_range("scratch", a.index(), p.scratch()->size(), "scratch entries"));
      const auto* s = p.scratch()->Get(a.index());
      if (s->kernel() != step.kernel())
        return bad(where, "scratch '" + s->name()->str() + "' belongs to kernel " + std::to_string(s->kernel()) +
                              ", not the step's kernel " + std::to_string(step.kernel()));
      if (a.offset() >= s->max_size_bytes())  // as kern-verify's E0138 (offset >= size)
        return bad(where, "offset " + std::to_string(a.offset()) + " B is past the end of scratch '" +
                              s->name()->str() + "' (" + std::to_string(s->max_size_bytes()) + " B)");
      break;
    }
    case plan::ArgKind::literal: {
      // The writer stores the param-sized value with the upper bits zero;
      // anything else is a literal that does not fit its declared type.
      const uint64_t size = plan_param_size(prm);
      if (size < 8 && (a.literal() >> (8 * size)) != 0)
        return bad(where, "literal 0x" + hex64(a.literal()) + " does not fit the param's " +
                              std::to_string(size) + "-byte type");
      break;
    }
    case plan::ArgKind::expr: KERN_RETURN_IF_ERROR(check_expr(a.expr(), p, where + ".expr")); break;
  }
  return {};
}

Status check_programs(const plan::Plan& p) {
  for (uoffset_t i = 0; i < p.programs()->size(); ++i) {
    const auto* prog = p.programs()->Get(i);
    std::string pwhere = at("programs", i) + " '" + prog->name()->str() + "'";
    if (prog->dispatch_labels() != nullptr && prog->dispatch_labels()->size() != prog->dispatch_count())
      return bad(pwhere, std::to_string(prog->dispatch_labels()->size()) + " dispatch labels for " +
                             std::to_string(prog->dispatch_count()) + " dispatches");
    for (uoffset_t j = 0; j < prog->launches()->size(); ++j) {
      const auto* l = prog->launches()->Get(j);
      std::string where = pwhere + ".launches[" + std::to_string(j) + "]";
      if (l->step() >= p.steps()->size())
        return bad(where, out_of_range("step", l->step(), p.steps()->size(), "steps"));
      if (l->dispatch() >= prog->dispatch_count())
        return bad(where, out_of_range("dispatch", l->dispatch(), prog->dispatch_count(), "dispatches"));
      const auto* step = p.steps()->Get(l->step());
      if (l->args()->size() != step->params()->size())
        return bad(where, std::to_string(l->args()->size()) + " args for step '" + step->symbol()->str() +
                              "' with " + std::to_string(step->params()->size()) + " params");
      for (uoffset_t k = 0; k < l->args()->size(); ++k)
        KERN_RETURN_IF_ERROR(check_arg(*l->args()->Get(k), *step->params()->Get(k), *step, p,
                                       where + ".args[" + std::to_string(k) + "]"));
    }
  }
  return {};
}

}  // namespace

Status validate_plan(const plan::Plan& p) {
  KERN_RETURN_IF_ERROR(check_tables(p));
  KERN_RETURN_IF_ERROR(check_programs(p));
  // Indices are sound now; the arena offsets are proven independently of
  // whoever planned them (sort and sweep, common/arena_check.h).
  if (auto problem = check_plan_arena(p)) return bad("arena", *problem);
  return {};
}

}  // namespace kern::load
