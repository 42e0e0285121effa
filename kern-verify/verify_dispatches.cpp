// SPEC §4 rule 7: every dispatch against its kernel's interface.
//
// Argument rule (decided here):
// - pointer params take `{"buf"}` or `{"state"}`; a buffer goes into
//   `buffer<d>` only with dtype exactly d (E0142) or into an untyped `ptr`; a
//   state goes only into `ptr` (E0143);
// - scalar params take a literal of exactly their kind (E0146), or (integer
//   params only, never f32: E0145) a `{"sym"}` / `{"expr"}` whose range over
//   the symbol bounds fits the param type (E0144);
// - offsets are bytes: a multiple of the element size for `buffer<d>` params
//   (E0147) and below the buffer's size at the symbols' minima, or below
//   `bytes_fixed` for a fixed state (E0148). A per-token state has no static
//   size (the capacity is chosen at load), so its offsets are not bounded here.
// References inside a dispatch whose kernel is unknown are still resolved (so
// their typos are reported and nothing cascades into "unused").
#include "kern-verify/verify_rules.h"

namespace kern::verify {
namespace {

/// Resolves the names an arg mentions (no type checks). Returns the range of a
/// sym/expr argument when it evaluated.
std::optional<Range> resolve_arg(Context& ctx, const Arg& a, const std::string& subject) {
  switch (a.kind) {
    case Arg::Kind::kBuf: (void)ctx.resolve_buffer(a.name, a.name_span, subject); return std::nullopt;
    case Arg::Kind::kState: (void)ctx.resolve_state(a.name, a.name_span, subject); return std::nullopt;
    case Arg::Kind::kSym: {
      auto idx = ctx.resolve_symbol(a.name, a.name_span, subject);
      if (!idx || !ctx.symbol_ok[*idx]) return std::nullopt;
      return Range{ctx.m.symbols[*idx].min, ctx.m.symbols[*idx].max};
    }
    case Arg::Kind::kExpr:
      if (a.expr) return ctx.eval_range(*a.expr, subject);
      return std::nullopt;
    default: return std::nullopt;
  }
}

void kind_error(Context& ctx, const Arg& a, const ParamType& p, size_t j, const std::string& subject,
                const std::string& help) {
  Diagnostic& d = ctx.error(Code::kDispatchArgKind,
                            subject + ": " + std::string(arg_kind_name(a.kind)) + " passed to param " +
                                std::to_string(j) + " `" + param_type_name(p) + "`",
                            a.span);
  d.label = p.is_pointer() ? "expected a buffer or state" : "expected a scalar";
  d.help = help;
}

void check_offset(Context& ctx, const Arg& a, const ParamType& p, std::optional<uint64_t> size_bytes,
                  const std::string& what, const std::string& subject) {
  if (p.kind == ParamKind::kBuffer) {
    const uint32_t elem = dtype_size_bytes(p.dtype);
    if (a.offset % elem != 0) {
      Diagnostic& d = ctx.error(Code::kOffsetMisaligned,
                                subject + ": offset " + std::to_string(a.offset) +
                                    " B is not a multiple of the element size " + std::to_string(elem) + " B of `" +
                                    param_type_name(p) + "`",
                                a.offset_span.end > 0 ? a.offset_span : a.span);
      d.label = "misaligned";
    }
  }
  if (size_bytes && a.offset >= *size_bytes) {
    Diagnostic& d = ctx.error(Code::kOffsetOutOfBounds,
                              subject + ": offset " + std::to_string(a.offset) + " B is past the end of " + what +
                                  " `" + a.name + "` (" + std::to_string(*size_bytes) + " B" +
                                  (what == "buffer" ? " at the symbols' minima)" : ")"),
                              a.offset_span.end > 0 ? a.offset_span : a.span);
    d.label = "out of bounds";
  }
}

constexpr const char* kScalarParamHelp = "a scalar param takes a literal, {\"sym\": ...} or {\"expr\": ...}";
constexpr const char* kPointerParamHelp = "a pointer param takes {\"buf\": ...} or {\"state\": ...}";

/// {"buf": ...} into param `p`: a pointer of the buffer's dtype, offset inside.
void check_buffer_arg(Context& ctx, const Arg& a, const ParamType& p, size_t j, const std::string& subject) {
  auto b = ctx.resolve_buffer(a.name, a.name_span, subject);
  if (!b) return;
  const Buffer& buf = ctx.m.buffers[*b];
  if (p.is_scalar()) {
    kind_error(ctx, a, p, j, subject, kScalarParamHelp);
    return;
  }
  if (p.kind == ParamKind::kBuffer && buf.dtype != p.dtype) {
    Diagnostic& d = ctx.error(Code::kDispatchDtypeMismatch,
                              subject + ": buffer `" + buf.name + "` is " + std::string(dtype_name(buf.dtype)) +
                                  " but param " + std::to_string(j) + " is `" + param_type_name(p) + "`",
                              a.span);
    d.label = "dtype differs";
    // The buffer's declaration first, then the param's (arg_param_note).
    d.notes.insert(d.notes.begin(), DiagnosticNote{"the buffer is declared here", buf.name_span, true});
  }
  const auto& bytes = ctx.buffer_bytes[*b];
  check_offset(ctx, a, p, bytes ? std::optional<uint64_t>(bytes->min) : std::nullopt, "buffer", subject);
}

/// {"state": ...} into param `p`: an untyped pointer, offset inside a fixed-size state.
void check_state_arg(Context& ctx, const Arg& a, const ParamType& p, size_t j, const std::string& subject) {
  auto s = ctx.resolve_state(a.name, a.name_span, subject);
  if (!s) return;
  if (p.is_scalar()) {
    kind_error(ctx, a, p, j, subject, kScalarParamHelp);
    return;
  }
  if (p.kind == ParamKind::kBuffer) {
    Diagnostic& d = ctx.error(Code::kStateIntoBuffer,
                              subject + ": state `" + a.name + "` passed to param " + std::to_string(j) + " `" +
                                  param_type_name(p) + "`",
                              a.span);
    d.label = "a state is untyped";
    d.help = "declare the param as `" + std::string(p.access == Access::kIn    ? "in"
                                                     : p.access == Access::kOut ? "out"
                                                                                : "inout") +
             " ptr`";
    return;
  }
  const State& st = ctx.m.states[*s];
  const bool fixed = st.bytes_fixed != 0 && st.bytes_per_token == 0;
  check_offset(ctx, a, p, fixed ? std::optional<uint64_t>(st.bytes_fixed) : std::nullopt, "state", subject);
}

/// {"sym": ...} or {"expr": ...} into param `p`: an integer scalar whose
/// range holds the value at the symbols' maxima.
void check_symbolic_arg(Context& ctx, const Arg& a, const ParamType& p, size_t j, const std::string& subject) {
  auto r = resolve_arg(ctx, a, subject);
  if (p.is_pointer()) {
    kind_error(ctx, a, p, j, subject, kPointerParamHelp);
    return;
  }
  if (p.kind == ParamKind::kF32) {
    Diagnostic& d = ctx.error(
        Code::kF32FromSymbol,
        subject + ": " + std::string(arg_kind_name(a.kind)) + " passed to f32 param " + std::to_string(j), a.span);
    d.label = "symbols are integers";
    d.help = "pass an f32 literal: {\"f32\": ...}";
    return;
  }
  const ScalarRange limit = param_scalar_range(p.kind);
  if (r && r->max > limit.max) {
    Diagnostic& d = ctx.error(Code::kScalarRange,
                              subject + ": " + std::string(arg_kind_name(a.kind)) + " ranges over [" +
                                  std::to_string(r->min) + ", " + std::to_string(r->max) +
                                  "] which does not fit param " + std::to_string(j) + " `" + param_type_name(p) +
                                  "` (max " + std::to_string(limit.max) + ")",
                              a.span);
    d.label = "out of range at the symbols' maxima";
  }
}

/// A typed literal into param `p`: a scalar of the same kind.
void check_literal_arg(Context& ctx, const Arg& a, const ParamType& p, size_t j, const std::string& subject) {
  if (p.is_pointer()) {
    kind_error(ctx, a, p, j, subject, kPointerParamHelp);
  } else if (literal_param_kind(a.kind) != p.kind) {
    Diagnostic& d = ctx.error(Code::kLiteralKind,
                              subject + ": " + std::string(arg_kind_name(a.kind)) + " passed to param " +
                                  std::to_string(j) + " `" + param_type_name(p) + "`",
                              a.span);
    d.label = "kind differs";
    d.help = "write it as {\"" + param_type_name(p) + "\": ...}";
  }
}

void check_arg(Context& ctx, const Arg& a, const ParamType& p, size_t j, const std::string& subject) {
  switch (a.kind) {
    case Arg::Kind::kBuf: check_buffer_arg(ctx, a, p, j, subject); return;
    case Arg::Kind::kState: check_state_arg(ctx, a, p, j, subject); return;
    case Arg::Kind::kSym:
    case Arg::Kind::kExpr: check_symbolic_arg(ctx, a, p, j, subject); return;
    default: check_literal_arg(ctx, a, p, j, subject); return;
  }
}

}  // namespace

void check_dispatches(Context& ctx) {
  for (size_t pi = 0; pi < ctx.m.programs.size(); ++pi) {
    const Program& prog = ctx.m.programs[pi];
    for (size_t di = 0; di < prog.dispatches.size(); ++di) {
      const Dispatch& disp = prog.dispatches[di];
      const std::string subject = dispatch_subject(prog, di);
      auto k = ctx.resolve_kernel(disp.kernel, disp.kernel_span, subject);
      bool ok = k.has_value();
      if (k && disp.args.size() != ctx.m.kernels[*k].params.size()) {
        const size_t want = ctx.m.kernels[*k].params.size();
        Diagnostic& d = ctx.error(Code::kDispatchArgCount,
                                  subject + ": " + std::to_string(disp.args.size()) + " args for kernel `" +
                                      disp.kernel + "` which takes " + std::to_string(want),
                                  disp.args_span.end > 0 ? disp.args_span : disp.span);
        d.label = "expected " + std::to_string(want) + " args";
        d.notes.push_back(DiagnosticNote{"the interface is declared here", ctx.m.kernels[*k].params_span, true});
        ok = false;
      }
      for (size_t j = 0; j < disp.args.size(); ++j) {
        const Arg& a = disp.args[j];
        const std::string arg_subject = subject + ".args[" + std::to_string(j) + "]";
        if (ok) {
          const Kernel& kernel = ctx.m.kernels[*k];
          // Every finding about this argument points at the param it fills.
          if (j < kernel.param_spans.size())
            ctx.arg_param_note = DiagnosticNote{"param " + std::to_string(j) + " of `" + kernel.name +
                                                    "` is declared here",
                                                kernel.param_spans[j], true};
          check_arg(ctx, a, kernel.params[j], j, arg_subject);
          ctx.arg_param_note.reset();
        } else if (!literal_param_kind(a.kind)) {
          (void)resolve_arg(ctx, a, arg_subject);
        }
      }
      ctx.dispatch_ok[pi][di] = ok;
    }
  }
}

}  // namespace kern::verify
