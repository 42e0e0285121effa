// Serializing a PlanDesc into .kplan bytes with the FlatBuffers builder (plan_builder.h).
#include "test/load/plan_builder.h"

#include <stdexcept>

#include "common/plan_checksum.h"

namespace kern::test {

namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Offset<plan::Expr> expr(FlatBufferBuilder& b, const ExprDesc& e) { return plan::CreateExprDirect(b, &e.nodes); }

std::vector<Offset<plan::Expr>> shape(FlatBufferBuilder& b, const std::vector<ExprDesc>& dims) {
  std::vector<Offset<plan::Expr>> out;
  for (const auto& d : dims) out.push_back(expr(b, d));
  return out;
}

}  // namespace

std::vector<uint8_t> serialize(const PlanDesc& desc) {
  PlanDesc d = desc;
  ArenaDesc arena;
  if (d.arena) {
    arena = *d.arena;
  } else {  // the unplanned layout: every region in its own slot
    auto slot = [&](uint64_t& offset, uint64_t size) {
      offset = arena.size_bytes;
      arena.size_bytes += (size + 255) / 256 * 256;
    };
    for (auto& x : d.buffers)
      if (x.cls == plan::BufferClass::workspace) slot(x.arena_offset, x.max_size_bytes);
    for (auto& x : d.scratch) slot(x.arena_offset, x.max_size_bytes);
    arena.unplanned_bytes = arena.peak_live_bytes = arena.size_bytes;
    arena.planned = false;
  }
  FlatBufferBuilder b;
  std::vector<Offset<plan::Symbol>> symbols;
  for (const auto& s : d.symbols) symbols.push_back(plan::CreateSymbolDirect(b, s.name.c_str(), s.min, s.max));
  std::vector<Offset<plan::State>> states;
  for (const auto& s : d.states)
    states.push_back(plan::CreateStateDirect(b, s.name.c_str(), s.bytes_per_token, s.bytes_fixed, s.align));
  std::vector<Offset<plan::Buffer>> buffers;
  for (const auto& x : d.buffers) {
    auto dims = shape(b, x.shape);
    buffers.push_back(
        plan::CreateBufferDirect(b, x.name.c_str(), x.dtype, x.cls, &dims, x.max_size_bytes, x.arena_offset));
  }
  std::vector<Offset<plan::Cubin>> cubins;
  for (const auto& c : d.cubins)
    cubins.push_back(plan::CreateCubinDirect(b, c.path.c_str(), c.sha256 ? &*c.sha256 : nullptr));
  std::vector<Offset<plan::Kernel>> kernels;
  for (const auto& k : d.kernels) kernels.push_back(plan::CreateKernelDirect(b, k.name.c_str(), &k.params, &k.steps));
  std::vector<Offset<plan::Step>> steps;
  for (const auto& s : d.steps) {
    auto gx = expr(b, s.grid[0]), gy = expr(b, s.grid[1]), gz = expr(b, s.grid[2]);
    Offset<plan::Expr> shm = s.shared_mem ? expr(b, *s.shared_mem) : 0;
    steps.push_back(plan::CreateStepDirect(b, s.kernel, s.symbol.c_str(), s.cubin, &s.params, s.block[0], s.block[1],
                                           s.block[2], gx, gy, gz, shm));
  }
  std::vector<Offset<plan::Scratch>> scratch;
  for (const auto& s : d.scratch) {
    auto dims = shape(b, s.shape);
    scratch.push_back(
        plan::CreateScratchDirect(b, s.name.c_str(), s.kernel, s.dtype, &dims, s.max_size_bytes, s.arena_offset));
  }
  std::vector<Offset<plan::Program>> programs;
  for (const auto& p : d.programs) {
    std::vector<Offset<plan::Launch>> launches;
    for (const auto& l : p.launches) {
      std::vector<Offset<plan::LaunchArg>> args;
      for (const auto& a : l.args) {
        Offset<plan::Expr> e = a.expr ? expr(b, *a.expr) : 0;
        args.push_back(plan::CreateLaunchArg(b, a.kind, a.index, a.offset, a.literal, e));
      }
      launches.push_back(plan::CreateLaunchDirect(b, l.step, l.dispatch, &args));
    }
    std::vector<Offset<flatbuffers::String>> labels;
    if (p.labels)
      for (const auto& s : *p.labels) labels.push_back(b.CreateString(s));
    programs.push_back(plan::CreateProgramDirect(b, p.name.c_str(), p.dispatch_count, &launches,
                                                 p.labels ? &labels : nullptr));
  }
  auto root = plan::CreatePlanDirect(b, d.format_version, &d.manifest_sha256, d.model.c_str(), &symbols, &states,
                                     &buffers, &cubins, &kernels, &steps, &scratch, &programs,
                                     d.write_arena ? plan::CreateArena(b, arena.size_bytes, arena.align,
                                                                       arena.unplanned_bytes, arena.peak_live_bytes,
                                                                       arena.planned)
                                                   : 0);
  plan::FinishPlanBuffer(b, root);
  std::vector<uint8_t> bytes(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  auto trailer = plan_trailer(bytes);
  if (!trailer.ok()) throw std::runtime_error(trailer.error().message);
  bytes.insert(bytes.end(), trailer->begin(), trailer->end());
  return bytes;
}

std::vector<uint8_t> reseal(std::vector<uint8_t> bytes) {
  if (bytes.size() < kPlanTrailerBytes) throw std::runtime_error("reseal: no trailer to replace");
  bytes.resize(bytes.size() - kPlanTrailerBytes);
  auto trailer = plan_trailer(bytes);
  if (!trailer.ok()) throw std::runtime_error(trailer.error().message);
  bytes.insert(bytes.end(), trailer->begin(), trailer->end());
  return bytes;
}

PlanDesc tiny_plan() {
  using plan::Access;
  using plan::DType;
  using plan::ParamKind;
  PlanDesc d;
  d.symbols = {{"tokens", 1, 8}};
  d.states = {{"kv", 8, 0, 256}};
  const ExprDesc tokens = ExprDesc::s(0);
  d.buffers = {
      {"ids", DType::i64, plan::BufferClass::input, {tokens}, 64},
      {"bias", DType::i64, plan::BufferClass::weight, {ExprDesc::c(4)}, 32},
      {"acc", DType::i64, plan::BufferClass::workspace, {tokens}, 64},
      {"out", DType::i64, plan::BufferClass::output, {tokens}, 64},
  };
  d.scratch = {{"tmp", 1, DType::i64, {tokens}, 64}};
  const auto in_i64 = buf(Access::in_, DType::i64);
  const auto out_i64 = buf(Access::out, DType::i64);
  d.kernels = {
      {"add_bias", {in_i64, in_i64, out_i64, scalar(ParamKind::i32)}, {0}},
      {"finish", {in_i64, out_i64, ptr(Access::inout), scalar(ParamKind::i64), scalar(ParamKind::i32)}, {1, 2}},
  };
  StepDesc s0{0, "test_add_bias", -1, {in_i64, in_i64, out_i64, scalar(ParamKind::i32)}, {32, 1, 1},
              {tokens, ExprDesc::c(1), ExprDesc::c(1)}, std::nullopt};
  StepDesc s1{1, "test_double", -1, {in_i64, out_i64, scalar(ParamKind::i32)}, {64, 1, 1},
              {tokens.ceil_div(4), ExprDesc::c(2), ExprDesc::c(1)}, std::nullopt};
  StepDesc s2{1, "test_finish", -1, {in_i64, out_i64, ptr(Access::inout), scalar(ParamKind::i64), scalar(ParamKind::i32)},
              {128, 1, 1}, {ExprDesc::c(1), ExprDesc::c(1), ExprDesc::c(1)}, tokens.mul(16)};
  d.steps = {s0, s1, s2};
  ProgramDesc main{"main", 2, {}, std::vector<std::string>{"add_bias", "finish"}};
  main.launches.push_back({0, 0, {arg_buffer(0), arg_buffer(1), arg_buffer(2), arg_expr(tokens)}});
  main.launches.push_back({1, 1, {arg_buffer(2), arg_scratch(0), arg_expr(tokens)}});
  main.launches.push_back({2, 1, {arg_scratch(0), arg_buffer(3), arg_state(0, 8), arg_literal(1000), arg_expr(tokens)}});
  d.programs = {main};
  return d;
}

}  // namespace kern::test
