// The manifest v2 data model (SPEC §3): what the strict reader produces and
// the verifier checks. Plain data; every node keeps the SourceSpan of the JSON
// value it came from so diagnostics can point at it. Maps keep declaration
// order (vectors of named entries) so output is deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/dtype.h"
#include "common/expr.h"
#include "common/extern_ops.h"
#include "common/source.h"

namespace kern {

/// `meta.spec`: caller contract of a speculative-decoding manifest (upstream
/// `SpecMeta`); the runtime assigns no meaning to it.
struct SpecMeta {
  uint64_t block = 0;      ///< rows per draft/verify call
  int64_t mask_token = 0;  ///< token id filling the drafted rows
  SourceSpan span;
  SourceSpan block_span;       ///< the `block` value
  SourceSpan mask_token_span;  ///< the `mask_token` value
};

/// The most ranks a manifest may declare (E0167): kern-run starts every rank
/// on one machine.
inline constexpr uint64_t kMaxWorld = 64;

/// `meta`: format version (only 2 is valid), a free-form model label and,
/// for a tensor-parallel manifest, the world size (docs/parallel.md).
struct Meta {
  uint64_t version = 0;
  std::string model;
  std::optional<SpecMeta> spec;  ///< absent or null for plain prefill/decode manifests
  /// `meta.world`: ranks running this one manifest, each with its own weight
  /// shard; absent = 1. The verifier bounds it (E0167) and allows collectives
  /// only above 1 (E0168).
  uint64_t world = 1;
  SourceSpan span;
  SourceSpan version_span;
  SourceSpan world_span;  ///< the `world` value; empty when absent
};

/// `symbols.NAME`: a caller-supplied scalar with inclusive bounds (min defaults to 1).
struct Symbol {
  std::string name;
  uint64_t min = 1;
  uint64_t max = 0;
  SourceSpan span;      ///< the symbol's object
  SourceSpan name_span; ///< the key
};

/// `states.NAME`: opaque persistent state sized in bytes (SPEC §3). Exactly
/// one of bytes_per_token (scaled by capacity) and bytes_fixed is non-zero.
struct State {
  std::string name;
  uint64_t bytes_per_token = 0;
  uint64_t bytes_fixed = 0;
  uint64_t align = 256;  ///< power of two, in bytes
  SourceSpan span;
  SourceSpan align_span;  ///< the `align` value; empty (begin = end = 0) when defaulted
  SourceSpan name_span;
};

enum class BufferClass : uint8_t { kInput, kOutput, kWeight, kWorkspace, kCarry };
/// Manifest spelling of a buffer class: "input", "output", "weight", "workspace", "carry".
std::string_view buffer_class_name(BufferClass c);
/// Parses a manifest buffer class spelling; nullopt when unknown.
std::optional<BufferClass> parse_buffer_class(std::string_view s);

/// A shape dimension: a constant element count or a symbol name.
struct Dim {
  std::variant<uint64_t, std::string> value;
  SourceSpan span;
  bool is_symbol() const { return value.index() == 1; }
};

/// A domain bound (upstream `Bound`): an integer, a float, or a symbol
/// expression evaluated at the caller's symbol values.
struct Bound {
  enum class Kind : uint8_t { kInt, kFloat, kExpr };
  Kind kind = Kind::kInt;
  int64_t int_value = 0;     ///< kInt
  double float_value = 0.0;  ///< kFloat
  std::optional<Expr> expr;  ///< kExpr
  SourceSpan span;
};

/// `buffers.NAME.domain`: an optional prior on the buffer's contents
/// (upstream `Domain`). Either `min`/`max` or `index_into` (the reader
/// rejects both together); `monotone` requires a non-decreasing sequence.
struct Domain {
  std::optional<Bound> min;
  std::optional<Bound> max;
  std::optional<std::string> index_into;  ///< a buffer or state name
  bool monotone = false;
  std::optional<uint64_t> unit;  ///< rows / token slots per index (index_into)
  SourceSpan span;
};

/// `buffers.NAME`: dtype + shape (elements per dim) + class.
struct Buffer {
  std::string name;
  DType dtype = DType::kBf16;
  std::vector<Dim> shape;
  BufferClass cls = BufferClass::kWorkspace;
  std::optional<Domain> domain;  ///< absent or null: no prior
  SourceSpan span;
  SourceSpan name_span;
};

/// `impl.scratch.NAME`: private workspace of one implementation.
struct Scratch {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<Dim> shape;
  SourceSpan span;
  SourceSpan name_span;
};

/// A step argument: forwarded interface arg, scratch pointer (+ byte offset),
/// or a typed literal private to the implementation.
struct StepArg {
  enum class Kind : uint8_t { kArg, kScratch, kI32, kU32, kI64, kF32, kU8 };
  Kind kind = Kind::kArg;
  uint64_t index = 0;        ///< kArg: interface arg index
  std::string scratch;       ///< kScratch: scratch name
  uint64_t offset = 0;       ///< kScratch: byte offset
  SourceSpan offset_span;    ///< kScratch: the `offset` value; empty when defaulted
  int64_t int_value = 0;     ///< kI32/kI64 (and kU32/kU8 as non-negative)
  float f32_value = 0.0f;    ///< kF32
  SourceSpan span;
};

/// One launch inside an implementation (SPEC §3 `Step`).
struct Step {
  std::string symbol;  ///< entry symbol, or "extern:<op>" for runtime built-ins
  std::vector<ParamType> params;
  std::vector<SourceSpan> param_spans;
  uint32_t block[3] = {1, 1, 1};
  SourceSpan block_span;
  std::vector<Expr> grid;  ///< exactly 3 after a successful read
  SourceSpan grid_span;
  std::optional<Expr> shared_mem;  ///< dynamic shared memory in bytes
  std::optional<std::string> cubin;   ///< file relative to the kernels dir
  std::optional<std::string> sha256;  ///< 64 lower/upper-case hex digits when well-formed
  bool pdl = false;
  std::vector<StepArg> args;
  SourceSpan span;
  SourceSpan symbol_span, cubin_span, sha256_span, args_span, params_span;
  bool is_extern() const { return is_extern_symbol(symbol); }
};

/// A kernel: interface params + implementation (scratch + steps).
struct Kernel {
  std::string name;
  std::vector<ParamType> params;
  std::vector<SourceSpan> param_spans;
  std::vector<Scratch> scratch;
  std::vector<Step> steps;
  SourceSpan span;
  SourceSpan steps_span;  ///< the `impl.steps` array
  SourceSpan name_span;
  SourceSpan params_span;

  /// The scratch declaration called `scratch_name`; nullptr when absent.
  const Scratch* find_scratch(std::string_view scratch_name) const;
};

/// A dispatch argument (SPEC §3): tagged buffer/state reference with byte
/// offset, symbol, expression, or typed literal.
struct Arg {
  enum class Kind : uint8_t { kBuf, kState, kSym, kExpr, kI32, kU32, kI64, kF32, kU8 };
  Kind kind = Kind::kBuf;
  std::string name;          ///< kBuf/kState/kSym: the referenced name
  uint64_t offset = 0;       ///< kBuf/kState: byte offset (default 0)
  SourceSpan offset_span;    ///< kBuf/kState: the `offset` value; empty when defaulted
  std::optional<Expr> expr;  ///< kExpr
  int64_t int_value = 0;     ///< integer literals
  float f32_value = 0.0f;    ///< kF32
  SourceSpan span;
  SourceSpan name_span;      ///< the referenced name's string value
};

/// The scalar parameter kind a literal argument passes; nullopt for the
/// other kinds. The one mapping from both argument vocabularies to ParamKind:
/// the literal kinds end each enum in ParamKind's order (proven below).
template <typename ArgKind>
constexpr std::optional<ParamKind> literal_param_kind(ArgKind k) {
  if (k < ArgKind::kI32) return std::nullopt;
  return static_cast<ParamKind>(static_cast<uint8_t>(k) - static_cast<uint8_t>(ArgKind::kI32));
}
static_assert(literal_param_kind(Arg::Kind::kI32) == ParamKind::kI32 &&
              literal_param_kind(Arg::Kind::kU32) == ParamKind::kU32 &&
              literal_param_kind(Arg::Kind::kI64) == ParamKind::kI64 &&
              literal_param_kind(Arg::Kind::kF32) == ParamKind::kF32 &&
              literal_param_kind(Arg::Kind::kU8) == ParamKind::kU8 && !literal_param_kind(Arg::Kind::kExpr));
static_assert(literal_param_kind(StepArg::Kind::kI32) == ParamKind::kI32 &&
              literal_param_kind(StepArg::Kind::kU32) == ParamKind::kU32 &&
              literal_param_kind(StepArg::Kind::kI64) == ParamKind::kI64 &&
              literal_param_kind(StepArg::Kind::kF32) == ParamKind::kF32 &&
              literal_param_kind(StepArg::Kind::kU8) == ParamKind::kU8 &&
              !literal_param_kind(StepArg::Kind::kScratch));

/// A call site: kernel name + interface args.
struct Dispatch {
  std::string kernel;
  std::vector<Arg> args;
  std::optional<std::string> label;
  SourceSpan span;
  SourceSpan kernel_span;
  SourceSpan args_span;  ///< the `args` array
};

/// A program: a sequential list of dispatches (e.g. `prefill`, `decode`).
struct Program {
  std::string name;
  std::vector<Dispatch> dispatches;
  SourceSpan span;
  SourceSpan name_span;
};

/// A launch a generator could not write (docs/manifest.md "TODO sites"):
/// kern-lift names the call site it left out of `program` and why
/// (a struct-by-value parameter, a foreign library's internals). kern-verify
/// reports each as warning W0004; the program runs without that launch.
struct Todo {
  std::string site;                    ///< the call site ("symbol#occurrence")
  std::optional<std::string> program;  ///< the program it belongs in, when one
  std::string why;
  SourceSpan span;
  SourceSpan program_span;
};

/// A whole manifest, entries in file order.
struct Manifest {
  Meta meta;
  std::vector<Symbol> symbols;
  std::vector<State> states;
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Program> programs;
  std::vector<Todo> todos;  ///< optional top-level `todos`

  // Lookups by name; nullptr when absent (first match in file order).

  const Symbol* find_symbol(std::string_view name) const;
  const State* find_state(std::string_view name) const;
  const Buffer* find_buffer(std::string_view name) const;
  const Kernel* find_kernel(std::string_view name) const;
  const Program* find_program(std::string_view name) const;
};

}  // namespace kern
