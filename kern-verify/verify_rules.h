// The SPEC §4 rule groups, one function (and one file) each, run in this
// order by verify() (verifier.cpp). Later rules read facts and poison flags
// earlier rules left in the Context. Internal to kern-verify.
#pragma once

#include "kern-verify/verify_context.h"

namespace kern::verify {

/// Rules 1-2 (verify_symbols.cpp): meta.version == 2 (E0100); symbol
/// min <= max (E0101, poisons the symbol).
void check_symbols(Context& ctx);

/// Rule 3 (verify_states.cpp): exactly one of bytes_per_token / bytes_fixed
/// non-zero (E0102, E0103); align a power of two of at most
/// kMaxStateAlign = 4096 B (E0104).
void check_states(Context& ctx);

/// Rule 4 (verify_buffers.cpp): buffer and scratch shapes resolve and their
/// byte sizes fit u64 at the maxima (E0105-E0108); records the sizes;
/// W0003 for a workspace above the size threshold.
void check_shapes(Context& ctx);

/// Rule 5 (verify_steps.cpp): per impl step — block/grid/shared-memory
/// limits, sha256 and cubin pins, extern ops, step args vs step params
/// (count, kinds, dtypes); W0001.
void check_steps(Context& ctx);

/// Rule 6 (verify_impl_dataflow.cpp): impl vs interface — directions,
/// every `out` written, scratch offsets, scratch read-before-write, unused
/// scratch.
void check_impl_dataflow(Context& ctx);

/// Rule 7 (verify_dispatches.cpp): dispatches vs interfaces — kernel exists,
/// count, kinds, exact dtypes, scalar ranges, literals, offsets. Records
/// which dispatches are sound for rule 8.
void check_dispatches(Context& ctx);

/// Rule 8 (verify_program_dataflow.cpp): per program read-before-write,
/// no writes to input/weight, every output/carry written somewhere; W0002.
void check_program_dataflow(Context& ctx);

/// TODO sites (verify_todos.cpp): each `todos` entry is W0004; one naming
/// an undeclared program is E0166.
void check_todos(Context& ctx);

/// Rule 9 (verify_unused.cpp): every symbol, state, buffer and kernel is used.
void check_unused(Context& ctx);

}  // namespace kern::verify
