// lower(): see lower.h. Plan layout (schemas/plan.fbs): tables in manifest
// declaration order; Plan.steps is every kernel's steps, kernel by kernel;
// Plan.scratch likewise; Plan.cubins in order of first pin.
#include "kern-verify/lower.h"

#include <bit>
#include <map>

#include "common/arena_check.h"
#include "common/plan_checksum.h"
#include "common/plan_enums.h"
#include "common/plan_format.h"
#include "common/sha256.h"
#include "kern-verify/memory_planner.h"

namespace kern::verify {
namespace {

namespace fb = flatbuffers;

/// Little-endian bits of a literal as the param-sized value (upper bits zero).
uint64_t literal_bits(ParamKind kind, int64_t int_value, float f32_value) {
  switch (kind) {
    case ParamKind::kI32:
    case ParamKind::kU32: return static_cast<uint32_t>(int_value);
    case ParamKind::kU8: return static_cast<uint8_t>(int_value);
    case ParamKind::kF32: return std::bit_cast<uint32_t>(f32_value);
    default: return static_cast<uint64_t>(int_value);
  }
}

class Lowerer {
 public:
  Lowerer(const VerifiedManifest& v, const LowerOptions& options)
      : v_(v), m_(v.manifest()), arena_(plan_arena(v, options.plan_memory)) {}

  std::string run(const Sha256Digest& digest) {
    auto symbols = lower_symbols();
    auto states = lower_states();
    auto buffers = lower_buffers();
    auto cubins = lower_cubins();
    auto steps = lower_steps();
    auto kernels = lower_kernels();
    auto scratch = lower_scratch();
    auto programs = lower_programs();
    auto arena = plan::CreateArena(b_, arena_.size_bytes, kArenaAlign, arena_.unplanned_bytes,
                                   arena_.peak_live_bytes, arena_.planned);
    flatbuffers::Offset<plan::Spec> spec = 0;
    if (m_.meta.spec) spec = plan::CreateSpec(b_, m_.meta.spec->block, m_.meta.spec->mask_token);
    auto root = plan::CreatePlan(b_, kPlanFormatVersion, b_.CreateVector(digest.data(), digest.size()),
                                 b_.CreateString(m_.meta.model), symbols, states, buffers, cubins, kernels, steps,
                                 scratch, programs, arena, spec,
                                 static_cast<uint32_t>(m_.meta.world));
    plan::FinishPlanBuffer(b_, root);
    return std::string(reinterpret_cast<const char*>(b_.GetBufferPointer()), b_.GetSize());
  }

 private:
  /// Compiles `e` into a chain: the leaf (const or sym), then each ceil_div /
  /// mul on the way back up (the right operand is always a constant).
  fb::Offset<plan::Expr> chain(const Expr& e) {
    std::vector<const Expr*> path;
    for (const Expr* n = &e; n != nullptr; n = n->lhs.get()) {
      path.push_back(n);
      if (n->op == Expr::Op::kConst || n->op == Expr::Op::kSym) break;
    }
    std::vector<plan::ExprNode> nodes;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const Expr& n = **it;
      switch (n.op) {
        case Expr::Op::kConst: nodes.emplace_back(plan::ExprOp::const_, n.value); break;
        case Expr::Op::kSym: nodes.emplace_back(plan::ExprOp::sym, v_.symbol_index(n.sym)); break;
        case Expr::Op::kCeilDiv: nodes.emplace_back(plan::ExprOp::ceil_div, n.value); break;
        case Expr::Op::kMul: nodes.emplace_back(plan::ExprOp::mul, n.value); break;
      }
    }
    return plan::CreateExpr(b_, b_.CreateVectorOfStructs(nodes));
  }

  fb::Offset<fb::Vector<fb::Offset<plan::Expr>>> shape(const std::vector<Dim>& dims) {
    std::vector<fb::Offset<plan::Expr>> out;
    for (const Dim& d : dims) {
      std::vector<plan::ExprNode> node;
      if (d.is_symbol()) {
        node.emplace_back(plan::ExprOp::sym, v_.symbol_index(std::get<std::string>(d.value)));
      } else {
        node.emplace_back(plan::ExprOp::const_, std::get<uint64_t>(d.value));
      }
      out.push_back(plan::CreateExpr(b_, b_.CreateVectorOfStructs(node)));
    }
    return b_.CreateVector(out);
  }

  fb::Offset<fb::Vector<const plan::Param*>> params(const std::vector<ParamType>& ps) {
    std::vector<plan::Param> out;
    for (const ParamType& p : ps) out.push_back(to_plan(p));
    return b_.CreateVectorOfStructs(out);
  }

  fb::Offset<fb::Vector<fb::Offset<plan::Symbol>>> lower_symbols() {
    std::vector<fb::Offset<plan::Symbol>> out;
    for (const Symbol& s : m_.symbols) out.push_back(plan::CreateSymbol(b_, b_.CreateString(s.name), s.min, s.max));
    return b_.CreateVector(out);
  }

  fb::Offset<fb::Vector<fb::Offset<plan::State>>> lower_states() {
    std::vector<fb::Offset<plan::State>> out;
    for (const State& s : m_.states) {
      out.push_back(plan::CreateState(b_, b_.CreateString(s.name), s.bytes_per_token, s.bytes_fixed, s.align));
    }
    return b_.CreateVector(out);
  }

  fb::Offset<fb::Vector<fb::Offset<plan::Buffer>>> lower_buffers() {
    std::vector<fb::Offset<plan::Buffer>> out;
    for (uint32_t i = 0; i < m_.buffers.size(); ++i) {
      const Buffer& buf = m_.buffers[i];
      auto name = b_.CreateString(buf.name);
      auto dims = shape(buf.shape);
      out.push_back(plan::CreateBuffer(b_, name, to_plan(buf.dtype), to_plan(buf.cls), dims,
                                       v_.buffer_max_size_bytes(i), arena_.buffer_offsets[i]));
    }
    return b_.CreateVector(out);
  }

  fb::Offset<fb::Vector<fb::Offset<plan::Cubin>>> lower_cubins() {
    struct Entry {
      std::string path;
      std::optional<Sha256Digest> sha256;
    };
    std::vector<Entry> entries;
    for (const Kernel& k : m_.kernels) {
      for (const Step& s : k.steps) {
        if (!s.cubin || s.is_extern()) continue;
        auto [it, inserted] = cubin_index_.emplace(*s.cubin, static_cast<int32_t>(entries.size()));
        if (inserted) entries.push_back(Entry{*s.cubin, std::nullopt});
        Entry& e = entries[static_cast<size_t>(it->second)];
        if (!e.sha256 && s.sha256) e.sha256 = parse_sha256_hex(*s.sha256);  // verified: no conflicts
      }
    }
    std::vector<fb::Offset<plan::Cubin>> out;
    for (const Entry& e : entries) {
      auto path = b_.CreateString(e.path);
      fb::Offset<fb::Vector<uint8_t>> digest = 0;
      if (e.sha256) digest = b_.CreateVector(e.sha256->data(), e.sha256->size());
      out.push_back(plan::CreateCubin(b_, path, digest));
    }
    return b_.CreateVector(out);
  }

  fb::Offset<fb::Vector<fb::Offset<plan::Step>>> lower_steps() {
    std::vector<fb::Offset<plan::Step>> out;
    for (uint32_t k = 0; k < m_.kernels.size(); ++k) {
      step_base_.push_back(static_cast<uint32_t>(out.size()));
      for (const Step& s : m_.kernels[k].steps) {
        auto symbol = b_.CreateString(s.symbol);
        auto ps = params(s.params);
        auto gx = chain(s.grid[0]);
        auto gy = chain(s.grid[1]);
        auto gz = chain(s.grid[2]);
        fb::Offset<plan::Expr> smem = 0;
        if (s.shared_mem) smem = chain(*s.shared_mem);
        const int32_t cubin = (s.cubin && !s.is_extern()) ? cubin_index_.at(*s.cubin) : -1;
        out.push_back(plan::CreateStep(b_, k, symbol, cubin, ps, s.block[0], s.block[1], s.block[2], gx, gy, gz, smem,
                                       s.pdl));
      }
    }
    return b_.CreateVector(out);
  }

  fb::Offset<fb::Vector<fb::Offset<plan::Kernel>>> lower_kernels() {
    std::vector<fb::Offset<plan::Kernel>> out;
    for (uint32_t k = 0; k < m_.kernels.size(); ++k) {
      const Kernel& kernel = m_.kernels[k];
      std::vector<uint32_t> steps;
      for (uint32_t s = 0; s < kernel.steps.size(); ++s) steps.push_back(step_base_[k] + s);
      auto name = b_.CreateString(kernel.name);
      auto ps = params(kernel.params);
      out.push_back(plan::CreateKernel(b_, name, ps, b_.CreateVector(steps)));
    }
    return b_.CreateVector(out);
  }

  fb::Offset<fb::Vector<fb::Offset<plan::Scratch>>> lower_scratch() {
    std::vector<fb::Offset<plan::Scratch>> out;
    for (uint32_t k = 0; k < m_.kernels.size(); ++k) {
      const Kernel& kernel = m_.kernels[k];
      for (uint32_t s = 0; s < kernel.scratch.size(); ++s) {
        const Scratch& sc = kernel.scratch[s];
        auto name = b_.CreateString(sc.name);
        auto dims = shape(sc.shape);
        const uint32_t index = v_.scratch_index(k, s);
        out.push_back(plan::CreateScratch(b_, name, k, to_plan(sc.dtype), dims, v_.scratch_max_size_bytes(index),
                                          arena_.scratch_offsets[index]));
      }
    }
    return b_.CreateVector(out);
  }

  /// The launch arg for a forwarded dispatch arg (SPEC §3 `{"arg": i}`).
  fb::Offset<plan::LaunchArg> forwarded(const Arg& a) {
    switch (a.kind) {
      case Arg::Kind::kBuf:
        return plan::CreateLaunchArg(b_, plan::ArgKind::buffer, v_.buffer_index(a.name), a.offset);
      case Arg::Kind::kState:
        return plan::CreateLaunchArg(b_, plan::ArgKind::state, v_.state_index(a.name), a.offset);
      case Arg::Kind::kSym: {
        auto e = chain(Expr::symbol(a.name));
        return plan::CreateLaunchArg(b_, plan::ArgKind::expr, 0, 0, 0, e);
      }
      case Arg::Kind::kExpr: {
        auto e = chain(*a.expr);
        return plan::CreateLaunchArg(b_, plan::ArgKind::expr, 0, 0, 0, e);
      }
      default:
        return plan::CreateLaunchArg(b_, plan::ArgKind::literal, 0, 0,
                                     literal_bits(*literal_param_kind(a.kind), a.int_value, a.f32_value));
    }
  }

  fb::Offset<plan::Program> lower_program(const Program& p) {
    std::vector<fb::Offset<plan::Launch>> launches;
    std::vector<fb::Offset<fb::String>> labels;
    for (uint32_t d = 0; d < p.dispatches.size(); ++d) {
      const Dispatch& disp = p.dispatches[d];
      const uint32_t k = v_.kernel_index(disp.kernel);
      const Kernel& kernel = m_.kernels[k];
      for (uint32_t si = 0; si < kernel.steps.size(); ++si) {
        const Step& step = kernel.steps[si];
        std::vector<fb::Offset<plan::LaunchArg>> args;
        for (const StepArg& a : step.args) {
          switch (a.kind) {
            case StepArg::Kind::kArg: args.push_back(forwarded(disp.args[a.index])); break;
            case StepArg::Kind::kScratch:
              args.push_back(plan::CreateLaunchArg(
                  b_, plan::ArgKind::scratch, v_.scratch_index(k, v_.scratch_local_index(k, a.scratch)), a.offset));
              break;
            default:
              args.push_back(plan::CreateLaunchArg(b_, plan::ArgKind::literal, 0, 0,
                                                   literal_bits(*literal_param_kind(a.kind), a.int_value, a.f32_value)));
              break;
          }
        }
        launches.push_back(plan::CreateLaunch(b_, step_base_[k] + si, d, b_.CreateVector(args)));
      }
      labels.push_back(b_.CreateString(disp.label ? *disp.label : disp.kernel));
    }
    auto name = b_.CreateString(p.name);
    auto ls = b_.CreateVector(launches);
    auto lb = b_.CreateVector(labels);
    return plan::CreateProgram(b_, name, static_cast<uint32_t>(p.dispatches.size()), ls, lb);
  }

  fb::Offset<fb::Vector<fb::Offset<plan::Program>>> lower_programs() {
    std::vector<fb::Offset<plan::Program>> out;
    for (const Program& p : m_.programs) out.push_back(lower_program(p));
    return b_.CreateVector(out);
  }

  const VerifiedManifest& v_;
  const Manifest& m_;
  const PlannedArena arena_;
  fb::FlatBufferBuilder b_{1 << 16};
  std::map<std::string, int32_t> cubin_index_;
  std::vector<uint32_t> step_base_;
};

}  // namespace

Result<std::string> lower(const VerifiedManifest& manifest, std::string_view manifest_bytes,
                          const LowerOptions& options) {
  KERN_ASSIGN_OR_RETURN(auto digest, sha256_bytes(manifest_bytes), "hashing the manifest");
  std::string plan = Lowerer(manifest, options).run(digest);
  // The offsets the plan carries are proven by the independent checker
  // before anything is written (the loader proves them again).
  if (auto bad = check_plan_arena(*plan::GetPlan(plan.data())))
    return make_error(ErrorKind::kManifest, "internal error: the memory plan is unsound: " + *bad);
  KERN_ASSIGN_OR_RETURN(auto trailer,
                        plan_trailer(std::span(reinterpret_cast<const uint8_t*>(plan.data()), plan.size())),
                        "sealing the plan");
  plan.append(reinterpret_cast<const char*>(trailer.data()), trailer.size());
  return plan;
}

}  // namespace kern::verify
