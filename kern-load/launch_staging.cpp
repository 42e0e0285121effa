// Launch records staged at load time for replay (launch_staging.h).
#include "kern-load/launch_staging.h"

#include <bit>
#include <cstring>
#include <limits>

#include "common/expr.h"
#include "kern-load/plan_expr.h"

namespace kern::load {

static_assert(std::endian::native == std::endian::little,
              "kernelParams slots hold little-endian values in their low bytes");

namespace {

CompiledExpr compile(const plan::Expr& e, std::vector<plan::ExprNode>& pool) {
  CompiledExpr c;
  bool has_symbol = false;
  for (const auto* n : *e.nodes()) has_symbol |= n->op() == plan::ExprOp::sym;
  if (!has_symbol) {
    // Validated chains without symbols only fail by overflow; the verifier
    // proved ranges, so fold (an overflow keeps the chain for a run-time error).
    if (auto v = evaluate_chain(e, {})) {
      c.value = *v;
      return c;
    }
  }
  c.first = static_cast<uint32_t>(pool.size());
  c.count = e.nodes()->size();
  for (const auto* n : *e.nodes()) pool.push_back(*n);
  return c;
}

}  // namespace

bool evaluate_compiled(const CompiledExpr& e, std::span<const plan::ExprNode> nodes,
                       std::span<const uint64_t> symbols, uint64_t* out) {
  if (e.count == 0) {
    *out = e.value;
    return true;
  }
  uint64_t v = 0;
  for (uint32_t i = e.first; i < e.first + e.count; ++i) {
    const plan::ExprNode& n = nodes[i];
    uint64_t x = n.operand();
    switch (n.op()) {
      case plan::ExprOp::const_: v = x; break;
      case plan::ExprOp::sym: v = symbols[x]; break;  // index checked by validate_plan
      case plan::ExprOp::ceil_div:  // x != 0: checked by validate_plan
        v = v / x + (v % x != 0);
        break;
      case plan::ExprOp::mul:
        if (x != 0 && v > std::numeric_limits<uint64_t>::max() / x) return false;
        v *= x;
        break;
    }
  }
  *out = v;
  return true;
}

StagedProgram stage_program(const plan::Plan& p, uint32_t program, const Addresses& addr) {
  StagedProgram sp;
  const auto* prog = p.programs()->Get(program);
  size_t total_params = 0;
  for (const auto* l : *prog->launches()) total_params += l->args()->size();
  sp.slots.assign(total_params, 0);
  sp.param_ptrs.resize(total_params);
  for (size_t i = 0; i < total_params; ++i) sp.param_ptrs[i] = &sp.slots[i];

  uint32_t slot = 0;
  for (const auto* l : *prog->launches()) {
    const auto* step = p.steps()->Get(l->step());
    StagedLaunch sl;
    sl.step = l->step();
    sl.dispatch = l->dispatch();
    sl.dims.block[0] = step->block_x();
    sl.dims.block[1] = step->block_y();
    sl.dims.block[2] = step->block_z();
    sl.grid[0] = compile(*step->grid_x(), sp.nodes);
    sl.grid[1] = compile(*step->grid_y(), sp.nodes);
    sl.grid[2] = compile(*step->grid_z(), sp.nodes);
    if (step->shared_mem() != nullptr) sl.shared_mem = compile(*step->shared_mem(), sp.nodes);
    sl.first_param = slot;
    sl.num_params = l->args()->size();
    sl.first_patch = static_cast<uint32_t>(sp.patches.size());
    for (flatbuffers::uoffset_t k = 0; k < l->args()->size(); ++k, ++slot) {
      const auto* a = l->args()->Get(k);
      const plan::Param& prm = *step->params()->Get(k);
      uint32_t size = plan_param_size(prm);
      uint64_t mask = size == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * size)) - 1;
      switch (a->kind()) {
        case plan::ArgKind::buffer: sp.slots[slot] = addr.buffers[a->index()] + a->offset(); break;
        case plan::ArgKind::state: sp.slots[slot] = addr.states[a->index()] + a->offset(); break;
        case plan::ArgKind::scratch: sp.slots[slot] = addr.scratch[a->index()] + a->offset(); break;
        case plan::ArgKind::literal: sp.slots[slot] = a->literal() & mask; break;
        case plan::ArgKind::expr: {
          ExprPatch patch{slot, size, compile(*a->expr(), sp.nodes)};
          if (patch.expr.count == 0) {
            sp.slots[slot] = patch.expr.value & mask;  // folded: never changes
          } else {
            sp.patches.push_back(patch);
          }
          break;
        }
      }
    }
    sl.num_patches = static_cast<uint32_t>(sp.patches.size()) - sl.first_patch;
    sp.launches.push_back(sl);
  }
  return sp;
}

int64_t apply_symbols(StagedProgram& program, std::span<const uint64_t> symbols) {
  constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();
  for (size_t i = 0; i < program.launches.size(); ++i) {
    StagedLaunch& l = program.launches[i];
    for (int d = 0; d < 3; ++d) {
      uint64_t v = 0;
      if (!evaluate_compiled(l.grid[d], program.nodes, symbols, &v) || v > kU32Max) return static_cast<int64_t>(i);
      l.dims.grid[d] = static_cast<uint32_t>(v);
    }
    uint64_t shm = 0;
    if (!evaluate_compiled(l.shared_mem, program.nodes, symbols, &shm) || shm > kU32Max)
      return static_cast<int64_t>(i);
    l.dims.shared_mem_bytes = static_cast<uint32_t>(shm);
    for (uint32_t j = l.first_patch; j < l.first_patch + l.num_patches; ++j) {
      const ExprPatch& patch = program.patches[j];
      uint64_t v = 0;
      if (!evaluate_compiled(patch.expr, program.nodes, symbols, &v)) return static_cast<int64_t>(i);
      // The verifier range-checked expression args against the param type
      // (verify rule 7); store the low bytes.
      program.slots[patch.slot] = 0;
      std::memcpy(&program.slots[patch.slot], &v, patch.size_bytes);
    }
  }
  return -1;
}

}  // namespace kern::load
