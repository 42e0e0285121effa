// Test helper: a plain description of a .kplan (PlanDesc) that tests build,
// mutate one field at a time, and serialize with the FlatBuffers builder
// (until kern-verify writes plans, and for corrupt plans it never would).
// tiny_plan() is a 3-kernel plan exercising every argument kind; the fake
// reference kernels it names are in fake_kernels.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/plan_format.h"

namespace kern::test {

/// An expression chain: const(v) / sym(i), then .ceil_div(c) / .mul(c).
struct ExprDesc {
  std::vector<plan::ExprNode> nodes;
  static ExprDesc c(uint64_t v) { return {{plan::ExprNode(plan::ExprOp::const_, v)}}; }
  static ExprDesc s(uint64_t sym) { return {{plan::ExprNode(plan::ExprOp::sym, sym)}}; }
  ExprDesc ceil_div(uint64_t v) const { return then(plan::ExprOp::ceil_div, v); }
  ExprDesc mul(uint64_t v) const { return then(plan::ExprOp::mul, v); }
  ExprDesc then(plan::ExprOp op, uint64_t v) const {
    ExprDesc e = *this;
    e.nodes.emplace_back(op, v);
    return e;
  }
};

struct SymbolDesc { std::string name; uint64_t min = 1, max = 1; };
struct StateDesc { std::string name; uint64_t bytes_per_token = 0, bytes_fixed = 0, align = 256; };
struct BufferDesc {
  std::string name;
  plan::DType dtype = plan::DType::i64;
  plan::BufferClass cls = plan::BufferClass::workspace;
  std::vector<ExprDesc> shape;
  uint64_t max_size_bytes = 0;
  uint64_t arena_offset = 0;  ///< workspace only; used when PlanDesc::arena is set
};
struct CubinDesc { std::string path; std::optional<std::vector<uint8_t>> sha256; };
struct ScratchDesc {
  std::string name;
  uint32_t kernel = 0;
  plan::DType dtype = plan::DType::i64;
  std::vector<ExprDesc> shape;
  uint64_t max_size_bytes = 0;
  uint64_t arena_offset = 0;  ///< used when PlanDesc::arena is set
};
struct StepDesc {
  uint32_t kernel = 0;
  std::string symbol;
  int32_t cubin = -1;
  std::vector<plan::Param> params;
  uint32_t block[3] = {1, 1, 1};
  ExprDesc grid[3] = {ExprDesc::c(1), ExprDesc::c(1), ExprDesc::c(1)};
  std::optional<ExprDesc> shared_mem;
};
struct KernelDesc { std::string name; std::vector<plan::Param> params; std::vector<uint32_t> steps; };
struct ArgDesc {
  plan::ArgKind kind = plan::ArgKind::buffer;
  uint32_t index = 0;
  uint64_t offset = 0;
  uint64_t literal = 0;
  std::optional<ExprDesc> expr;
};
struct LaunchDesc { uint32_t step = 0; uint32_t dispatch = 0; std::vector<ArgDesc> args; };
struct ProgramDesc {
  std::string name;
  uint32_t dispatch_count = 0;
  std::vector<LaunchDesc> launches;
  std::optional<std::vector<std::string>> labels;
};

/// Plan.arena as written; offsets come from the buffer and scratch descs.
struct ArenaDesc {
  uint64_t size_bytes = 0;
  uint64_t align = 256;
  uint64_t unplanned_bytes = 0;
  uint64_t peak_live_bytes = 0;
  bool planned = true;
};

struct PlanDesc {
  uint32_t format_version = kPlanFormatVersion;
  std::vector<uint8_t> manifest_sha256 = std::vector<uint8_t>(32, 0xab);
  std::string model = "test";
  std::vector<SymbolDesc> symbols;
  std::vector<StateDesc> states;
  std::vector<BufferDesc> buffers;
  std::vector<CubinDesc> cubins;
  std::vector<KernelDesc> kernels;
  std::vector<StepDesc> steps;
  std::vector<ScratchDesc> scratch;
  std::vector<ProgramDesc> programs;
  /// Unset: serialize writes the unplanned layout (every workspace buffer
  /// and scratch in its own 256-byte-aligned slot, in order) and ignores the
  /// descs' arena_offset. Set: written as given (tests of the arena check).
  std::optional<ArenaDesc> arena;
  /// False: no Plan.arena at all (a plan of format version 1).
  bool write_arena = true;
};

inline plan::Param buf(plan::Access a, plan::DType d) { return plan::Param(plan::ParamKind::buffer, a, d); }
inline plan::Param ptr(plan::Access a) { return plan::Param(plan::ParamKind::ptr, a, plan::DType::u8); }
inline plan::Param scalar(plan::ParamKind k) { return plan::Param(k, plan::Access::in_, plan::DType::u8); }

inline ArgDesc arg_buffer(uint32_t i, uint64_t offset = 0) { return {plan::ArgKind::buffer, i, offset, 0, {}}; }
inline ArgDesc arg_state(uint32_t i, uint64_t offset = 0) { return {plan::ArgKind::state, i, offset, 0, {}}; }
inline ArgDesc arg_scratch(uint32_t i, uint64_t offset = 0) { return {plan::ArgKind::scratch, i, offset, 0, {}}; }
inline ArgDesc arg_literal(uint64_t bits) { return {plan::ArgKind::literal, 0, 0, bits, {}}; }
inline ArgDesc arg_expr(ExprDesc e) { return {plan::ArgKind::expr, 0, 0, 0, std::move(e)}; }

/// Serializes `d` as a finished "KPLN" FlatBuffer followed by its checksum
/// trailer (common/plan_checksum.h), as kern-verify writes it.
std::vector<uint8_t> serialize(const PlanDesc& d);

/// Replaces the checksum trailer of serialized plan `bytes` (edited after
/// serialize) with one that matches: a hostile writer can always do this, so
/// tests of the checks behind the checksum use it.
std::vector<uint8_t> reseal(std::vector<uint8_t> bytes);

/// The tiny plan (symbol `tokens` in [1, 8]):
///   buffers: 0 `ids` i64 [tokens] input, 1 `bias` i64 [4] weight,
///            2 `acc` i64 [tokens] workspace, 3 `out` i64 [tokens] output;
///   state 0 `kv`: 8 B/token; scratch 0 `tmp` i64 [tokens] of kernel 1;
///   kernel 0 `add_bias` = step 0 `test_add_bias`(in ids, in bias, out acc, i32 n);
///   kernel 1 `finish` = step 1 `test_double`(in acc, out tmp, i32 n) then
///            step 2 `test_finish`(in tmp, out out, inout ptr kv, i64 k, i32 n);
///   program 0 `main`: dispatch 0 add_bias(ids, bias, acc, tokens),
///            dispatch 1 finish(acc, out, kv + 8, literal k = 1000, tokens).
/// Result: out[i] = 2 * (ids[i] + bias[i % 4]) + 1000; kv[1 + i] += 1.
PlanDesc tiny_plan();

}  // namespace kern::test
