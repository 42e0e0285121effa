// Pre-built launch records for replay (SPEC §6, style.md §5): at load time
// every launch of a program gets its kernelParams slot array, pointer slots
// filled with base + offset and literal slots with their bits; only
// symbol-dependent values (expression args, non-constant grids and shared
// memory) are recomputed per run, from a flat node pool. The replay loop
// indexes arrays only: no allocation, map lookup or string formatting.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/plan_format.h"
#include "common/result.h"
#include "kern-load/device.h"

namespace kern::load {

/// An expression chain copied into StagedProgram::nodes: [first, first + count).
/// count == 0 means "constant `value`" (folded at staging time).
struct CompiledExpr {
  uint32_t first = 0;
  uint32_t count = 0;
  uint64_t value = 0;
};

/// A scalar param whose value depends on the symbols: re-evaluated per run.
struct ExprPatch {
  uint32_t slot = 0;       ///< index into StagedProgram::slots
  uint32_t size_bytes = 0; ///< 1, 4 or 8 (the param's size)
  CompiledExpr expr;
};

/// One launch ready to replay.
struct StagedLaunch {
  uint32_t step = 0;
  uint32_t dispatch = 0;
  LaunchDims dims;              ///< block fixed; grid/shared_mem filled per run
  CompiledExpr grid[3];
  CompiledExpr shared_mem;      ///< constant 0 when the step has none
  uint32_t first_param = 0;     ///< index into slots / param_ptrs
  uint32_t num_params = 0;
  uint32_t first_patch = 0;     ///< index into patches
  uint32_t num_patches = 0;
};

/// Everything one program needs at replay. Owns its slots; param_ptrs point
/// into slots (stable: the vectors are never resized after staging, and a
/// moved vector keeps its storage).
struct StagedProgram {
  std::vector<StagedLaunch> launches;
  std::vector<uint64_t> slots;    ///< one 8-byte slot per param, value in the low bytes (little-endian host)
  std::vector<void*> param_ptrs;  ///< param_ptrs[i] == &slots[i]
  std::vector<ExprPatch> patches;
  std::vector<plan::ExprNode> nodes;  ///< expression node pool
};

/// Addresses of every allocation, indexed like Plan.buffers/states/scratch.
struct Addresses {
  std::vector<DevicePtr> buffers;
  std::vector<DevicePtr> states;
  std::vector<DevicePtr> scratch;
};

/// Stages program `program` of the validated plan `p` against `addr`.
StagedProgram stage_program(const plan::Plan& p, uint32_t program, const Addresses& addr);

/// Evaluates a compiled expression at `symbols`; false on u64 overflow.
/// Hot path: no allocation.
bool evaluate_compiled(const CompiledExpr& e, std::span<const plan::ExprNode> nodes,
                       std::span<const uint64_t> symbols, uint64_t* out);

/// Fills `program`'s per-run values at `symbols`: expression slots and each
/// launch's grid and shared memory. Returns the index of the first launch
/// whose values overflow (u64, or u32 for grid/shared memory), or -1 when
/// all fit. Hot path: no allocation.
int64_t apply_symbols(StagedProgram& program, std::span<const uint64_t> symbols);

}  // namespace kern::load
