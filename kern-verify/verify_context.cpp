// Context helpers: reference resolution with "did you mean" help, expression
// ranges at the symbol bounds, shape byte sizes. See verify_context.h.
#include "kern-verify/verify_context.h"

#include <algorithm>

#include "common/expr.h"

namespace kern::verify {
namespace {

template <typename Entry>
std::vector<std::string_view> names_of(const std::vector<Entry>& entries) {
  std::vector<std::string_view> out;
  out.reserve(entries.size());
  for (const Entry& e : entries) out.push_back(e.name);
  return out;
}

// Optimal-string-alignment distance: insertions, deletions, substitutions and
// transpositions of adjacent characters ("tabel" -> "table") each cost 1.
// Returns `bound` + 1 as soon as the distance must exceed `bound` (a row's
// minimum never decreases), with rolling rows reused across calls: a hostile
// manifest may ask for suggestions among many thousands of names.
size_t edit_distance(std::string_view a, std::string_view b, size_t bound) {
  thread_local std::vector<size_t> prev2, prev, cur;
  prev2.assign(b.size() + 1, 0);
  prev.resize(b.size() + 1);
  cur.assign(b.size() + 1, 0);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t row_min = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
      row_min = std::min(row_min, cur[j]);
    }
    // A transposition reaches back two rows, so stop only when both exceed.
    if (row_min > bound && i > 1 && *std::min_element(prev.begin(), prev.end()) > bound) return bound + 1;
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return std::min(prev[b.size()], bound + 1);
}


// Adds "help: a X with a similar name exists" for the closest same-section
// name, else points at a declaration of that name in another section (a state
// passed as {"buf"}). Returns the suggested name's index: the caller marks it
// used, since the typo most likely meant it (no "unused" cascade).
//
// Suggestions cost (unknown names) x (declared names); past a budget of
// compared characters a hostile manifest gets no more of them (the errors
// stay), so checking stays fast on any input.
constexpr size_t kSuggestionBudget = size_t{64} << 20;

template <typename Entry>
std::optional<uint32_t> add_help(Diagnostic& d, const std::string& name, std::string_view what,
                                 const std::vector<Entry>& entries, Context& ctx) {
  const size_t cost = entries.size() * (name.size() + 1);
  ctx.suggestion_work += cost;
  const std::vector<std::string_view> candidates =
      ctx.suggestion_work <= kSuggestionBudget ? names_of(entries) : std::vector<std::string_view>{};
  if (auto best = closest_name(name, candidates)) {
    d.help = "a " + std::string(what) + " with a similar name exists: `" + *best + "`";
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i] == *best) return static_cast<uint32_t>(i);
    }
    return std::nullopt;
  }
  if (what != "state" && ctx.names.states.count(name) > 0) {
    d.help = "`" + name + "` is a state: pass it as {\"state\": \"" + name + "\"}";
  } else if (what != "buffer" && ctx.names.buffers.count(name) > 0) {
    d.help = "`" + name + "` is a buffer: pass it as {\"buf\": \"" + name + "\"}";
  } else if (what != "symbol" && ctx.names.symbols.count(name) > 0) {
    d.help = "`" + name + "` is a symbol: pass it as {\"sym\": \"" + name + "\"}";
  }
  return std::nullopt;
}

}  // namespace

Context::Context(const Manifest& manifest, DiagnosticEngine& engine, const VerifyOptions& opts)
    : m(manifest),
      diag(engine),
      options(opts),
      names(NameTables::build(manifest)),
      symbol_ok(manifest.symbols.size(), true),
      buffer_bytes(manifest.buffers.size()),
      kernels(manifest.kernels.size()),
      symbol_used(manifest.symbols.size(), false),
      state_used(manifest.states.size(), false),
      buffer_used(manifest.buffers.size(), false),
      kernel_used(manifest.kernels.size(), false) {
  for (size_t k = 0; k < manifest.kernels.size(); ++k) {
    kernels[k].scratch_bytes.resize(manifest.kernels[k].scratch.size());
    kernels[k].scratch_used.assign(manifest.kernels[k].scratch.size(), false);
    kernels[k].step_wiring_ok.assign(manifest.kernels[k].steps.size(), false);
  }
  dispatch_ok.resize(manifest.programs.size());
  for (size_t p = 0; p < manifest.programs.size(); ++p) {
    dispatch_ok[p].assign(manifest.programs[p].dispatches.size(), false);
  }
}

namespace {
/// Whether a finding of `code` gets the current argument's param note.
bool about_the_param(Code code) {
  return code != Code::kUnknownBuffer && code != Code::kUnknownState && code != Code::kUnknownSymbol;
}
}  // namespace

Diagnostic& Context::error(Code code, std::string message, const SourceSpan& span) {
  Diagnostic& d = diag.error(std::string(code_id(code)), std::move(message), span);
  if (arg_param_note && about_the_param(code)) d.notes.push_back(*arg_param_note);
  return d;
}

Diagnostic& Context::warning(Code code, std::string message, const SourceSpan& span) {
  Diagnostic& d = diag.warning(std::string(code_id(code)), std::move(message), span);
  if (arg_param_note && about_the_param(code)) d.notes.push_back(*arg_param_note);
  return d;
}

std::optional<uint32_t> Context::resolve_symbol(const std::string& name, const SourceSpan& span,
                                                const std::string& subject) {
  if (auto it = names.symbols.find(name); it != names.symbols.end()) {
    symbol_used[it->second] = true;
    return it->second;
  }
  Diagnostic& d = error(Code::kUnknownSymbol, subject + ": unknown symbol `" + name + "`", span);
  d.label = "not declared in `symbols`";
  if (auto meant = add_help(d, name, "symbol", m.symbols, *this)) symbol_used[*meant] = true;
  return std::nullopt;
}

std::optional<uint32_t> Context::resolve_state(const std::string& name, const SourceSpan& span,
                                               const std::string& subject) {
  if (auto it = names.states.find(name); it != names.states.end()) {
    state_used[it->second] = true;
    return it->second;
  }
  Diagnostic& d = error(Code::kUnknownState, subject + ": unknown state `" + name + "`", span);
  d.label = "not declared in `states`";
  if (auto meant = add_help(d, name, "state", m.states, *this)) state_used[*meant] = true;
  return std::nullopt;
}

std::optional<uint32_t> Context::resolve_buffer(const std::string& name, const SourceSpan& span,
                                                const std::string& subject) {
  if (auto it = names.buffers.find(name); it != names.buffers.end()) {
    buffer_used[it->second] = true;
    return it->second;
  }
  Diagnostic& d = error(Code::kUnknownBuffer, subject + ": unknown buffer `" + name + "`", span);
  d.label = "not declared in `buffers`";
  if (auto meant = add_help(d, name, "buffer", m.buffers, *this)) buffer_used[*meant] = true;
  return std::nullopt;
}

std::optional<uint32_t> Context::resolve_kernel(const std::string& name, const SourceSpan& span,
                                                const std::string& subject) {
  if (auto it = names.kernels.find(name); it != names.kernels.end()) {
    kernel_used[it->second] = true;
    return it->second;
  }
  Diagnostic& d = error(Code::kUnknownKernel, subject + ": unknown kernel `" + name + "`", span);
  d.label = "not declared in `kernels`";
  if (auto meant = add_help(d, name, "kernel", m.kernels, *this)) kernel_used[*meant] = true;
  return std::nullopt;
}

std::optional<Range> Context::eval_range(const Expr& e, const std::string& subject) {
  switch (e.op) {
    case Expr::Op::kConst:
      return Range{e.value, e.value};
    case Expr::Op::kSym: {
      auto idx = resolve_symbol(e.sym, e.span, subject);
      if (!idx || !symbol_ok[*idx]) return std::nullopt;
      const Symbol& s = m.symbols[*idx];
      return Range{s.min, s.max};
    }
    case Expr::Op::kCeilDiv: {
      if (!e.lhs) return std::nullopt;
      auto r = eval_range(*e.lhs, subject);
      if (e.value == 0) {
        Diagnostic& d = error(Code::kExprDivByZero,
                              subject + ": ceil_div by zero in `" + e.to_string() + "`", e.span);
        d.label = "divisor is 0";
        return std::nullopt;
      }
      if (!r) return std::nullopt;
      auto cdiv = [&](uint64_t a) { return a / e.value + (a % e.value != 0 ? 1 : 0); };
      return Range{cdiv(r->min), cdiv(r->max)};
    }
    case Expr::Op::kMul: {
      if (!e.lhs) return std::nullopt;
      auto r = eval_range(*e.lhs, subject);
      if (e.value == 0) {
        Diagnostic& d = error(Code::kExprMulByZero,
                              subject + ": mul by zero in `" + e.to_string() + "` is 0 at every symbol value",
                              e.span);
        d.label = "factor is 0";
        d.help = "write the constant 0, or the intended factor";
        return std::nullopt;
      }
      if (!r) return std::nullopt;
      auto hi = checked_mul(r->max, e.value);
      if (!hi) {
        Diagnostic& d = error(Code::kExprOverflow,
                              subject + ": `" + e.to_string() + "` overflows u64 at the symbols' maxima (" +
                                  std::to_string(r->max) + " x " + std::to_string(e.value) + ")",
                              e.span);
        d.label = "overflows";
        return std::nullopt;
      }
      return Range{r->min * e.value, *hi};
    }
  }
  return std::nullopt;
}

std::optional<Range> Context::shape_bytes(DType dtype, const std::vector<Dim>& shape,
                                          const SourceSpan& span, const std::string& subject) {
  if (shape.empty()) {
    Diagnostic& d = error(Code::kShapeEmpty, subject + ": shape has no dimensions", span);
    d.help = "write [1] for a single element";
    return std::nullopt;
  }
  bool ok = true;
  std::optional<uint64_t> lo = dtype_size_bytes(dtype), hi = dtype_size_bytes(dtype);
  for (size_t i = 0; i < shape.size(); ++i) {
    const Dim& dim = shape[i];
    Range extent;
    if (dim.is_symbol()) {
      auto idx = resolve_symbol(std::get<std::string>(dim.value), dim.span, subject);
      if (!idx || !symbol_ok[*idx]) {
        ok = false;
        continue;
      }
      extent = Range{m.symbols[*idx].min, m.symbols[*idx].max};
    } else {
      const uint64_t v = std::get<uint64_t>(dim.value);
      if (v == 0) {
        Diagnostic& d = error(Code::kShapeZeroDim,
                              subject + ": dimension " + std::to_string(i) + " is 0", dim.span);
        d.label = "zero-sized";
        ok = false;
        continue;
      }
      extent = Range{v, v};
    }
    if (lo) lo = checked_mul(*lo, extent.min);
    if (hi) hi = checked_mul(*hi, extent.max);
  }
  if (!ok) return std::nullopt;
  if (!hi) {
    Diagnostic& d = error(Code::kSizeOverflow,
                          subject + ": byte size overflows u64 at the symbols' maxima", span);
    d.label = "too large";
    return std::nullopt;
  }
  return Range{*lo, *hi};
}

std::string kernel_subject(const Kernel& k) { return "kernels." + k.name; }

std::string step_subject(const Kernel& k, size_t step) {
  return "kernels." + k.name + ".impl.steps[" + std::to_string(step) + "]";
}

std::string dispatch_subject(const Program& p, size_t dispatch) {
  return "programs." + p.name + ".dispatches[" + std::to_string(dispatch) + "]";
}

std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string_view>& candidates) {
  const size_t limit = std::max<size_t>(1, name.size() / 3);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (std::string_view c : candidates) {
    // The distance is at least the length difference: skip hopeless names
    // cheaply (a hostile manifest may hold many thousands of both).
    const size_t length_gap = c.size() > name.size() ? c.size() - name.size() : name.size() - c.size();
    if (length_gap >= best_distance) continue;
    const size_t d = edit_distance(name, c, best_distance - 1);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  }
  return best;
}

std::string_view arg_kind_name(Arg::Kind k) {
  switch (k) {
    case Arg::Kind::kBuf: return "buffer";
    case Arg::Kind::kState: return "state";
    case Arg::Kind::kSym: return "symbol";
    case Arg::Kind::kExpr: return "expression";
    case Arg::Kind::kI32: return "i32 literal";
    case Arg::Kind::kU32: return "u32 literal";
    case Arg::Kind::kI64: return "i64 literal";
    case Arg::Kind::kF32: return "f32 literal";
    case Arg::Kind::kU8: return "u8 literal";
  }
  return "argument";
}

std::string_view step_arg_kind_name(StepArg::Kind k) {
  switch (k) {
    case StepArg::Kind::kArg: return "interface arg";
    case StepArg::Kind::kScratch: return "scratch";
    case StepArg::Kind::kI32: return "i32 literal";
    case StepArg::Kind::kU32: return "u32 literal";
    case StepArg::Kind::kI64: return "i64 literal";
    case StepArg::Kind::kF32: return "f32 literal";
    case StepArg::Kind::kU8: return "u8 literal";
  }
  return "argument";
}

}  // namespace kern::verify
