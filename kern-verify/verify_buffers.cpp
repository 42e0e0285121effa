// SPEC §4 rule 4: every buffer and scratch shape resolves and its byte size
// fits u64 at the symbols' maxima (what the runtime allocates); a workspace
// above the size threshold is a warning (W0003). The sizes at
// the minima and maxima are recorded for offset checks (rules 6 and 7).
// Buffer domains' references (index_into, bound expressions) resolve too, their
// constant bounds are ordered (E0160) and `unit` goes with index_into and is
// non-zero (E0161, E0162); domains are documentation, not enforced at run time.
#include "kern-verify/verify_rules.h"

namespace kern::verify {

namespace {

// A domain is a prior on contents (reader: upstream `Domain`); the verifier
// checks that it is consistent (references resolve, constant bounds are
// ordered, `unit` goes with index_into). Nothing enforces it yet: domains are
// not lowered into the plan, so kern-run does not check input values or
// expression bounds against them (docs/manifest.md "Domains"); enforcing them
// would need a domain field in the plan (schemas/plan.fbs) and a check on
// kern-run's input writes.
void check_domain(Context& ctx, const Buffer& b) {
  const Domain& d = *b.domain;
  const std::string subject = "buffers." + b.name + ".domain";
  for (const auto* bound : {&d.min, &d.max}) {
    if (*bound && (*bound)->kind == Bound::Kind::kExpr && (*bound)->expr) {
      (void)ctx.eval_range(*(*bound)->expr, subject);
    }
  }
  if (d.min && d.max && d.min->kind != Bound::Kind::kExpr && d.max->kind != Bound::Kind::kExpr) {
    auto value = [](const Bound& b) {
      return b.kind == Bound::Kind::kInt ? static_cast<long double>(b.int_value) : static_cast<long double>(b.float_value);
    };
    if (value(*d.min) > value(*d.max)) {
      Diagnostic& diag = ctx.error(Code::kDomainBoundsInverted, subject + ": min is greater than max", d.min->span);
      diag.label = "greater than max";
      diag.notes.push_back(DiagnosticNote{"max is here", d.max->span, true});
    }
  }
  if (d.unit && !d.index_into) {
    Diagnostic& diag = ctx.error(Code::kDomainUnitWithoutIndex,
                                 subject + ": `unit` is given without `index_into`", d.span);
    diag.label = "unit of what?";
    diag.help = "remove `unit`, or add the buffer or state the values index";
  } else if (d.unit && *d.unit == 0) {
    Diagnostic& diag = ctx.error(Code::kDomainUnitZero, subject + ": `unit` is 0", d.span);
    diag.label = "an index covering no rows";
    diag.help = "leave `unit` out for one row per index";
  }
  if (!d.index_into) return;
  const std::string& target = *d.index_into;
  if (auto it = ctx.names.buffers.find(target); it != ctx.names.buffers.end()) {
    ctx.buffer_used[it->second] = true;
    return;
  }
  if (auto it = ctx.names.states.find(target); it != ctx.names.states.end()) {
    ctx.state_used[it->second] = true;
    return;
  }
  Diagnostic& diag = ctx.error(Code::kUnknownDomainTarget,
                               subject + ": index_into `" + target + "` is neither a buffer nor a state", d.span);
  diag.label = "unknown index target";
  std::vector<std::string_view> names;
  for (const Buffer& other : ctx.m.buffers) names.push_back(other.name);
  for (const State& st : ctx.m.states) names.push_back(st.name);
  if (auto best = closest_name(target, names)) diag.help = "a declaration with a similar name exists: `" + *best + "`";
}

}  // namespace

void check_shapes(Context& ctx) {
  const Manifest& m = ctx.m;
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const Buffer& b = m.buffers[i];
    ctx.buffer_bytes[i] = ctx.shape_bytes(b.dtype, b.shape, b.span, "buffers." + b.name);
    const auto& bytes = ctx.buffer_bytes[i];
    if (bytes && b.cls == BufferClass::kWorkspace && bytes->max > ctx.options.workspace_warn_bytes) {
      Diagnostic& d = ctx.warning(Code::kWorkspaceTooLarge,
                                  "buffers." + b.name + ": workspace is " + std::to_string(bytes->max) +
                                      " B at the symbols' maxima, above the " +
                                      std::to_string(ctx.options.workspace_warn_bytes) + " B threshold",
                                  b.span);
      d.label = "allocated at the maxima";
      d.help = "check the symbol bounds of its shape, or raise --workspace-warn-bytes";
    }
    if (b.domain) check_domain(ctx, b);
  }
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const Kernel& kernel = m.kernels[k];
    for (size_t s = 0; s < kernel.scratch.size(); ++s) {
      const Scratch& sc = kernel.scratch[s];
      ctx.kernels[k].scratch_bytes[s] =
          ctx.shape_bytes(sc.dtype, sc.shape, sc.span, kernel_subject(kernel) + ".impl.scratch." + sc.name);
    }
  }
}

}  // namespace kern::verify
