// SPEC §4 rule 6: an implementation against its interface, and the data flow
// between its steps.
//
// Direction rule for {"arg": i} into a pointer step param (decided here):
// - a step param that writes (`out`/`inout`) needs an interface param that
//   writes (`out`/`inout`): writing through an interface `in` is E0133;
// - a step param that reads (`in`/`inout`) may take any interface direction,
//   but an interface `out` holds no defined data on entry, so it may be read
//   only after an earlier step wrote it (E0135);
// - every interface `out` must be written by some step (E0134).
// Within one step all reads happen before its writes (a kernel reads its
// inputs at launch). Scratch follows the same rule: no read before an earlier
// step wrote it (E0136); offsets are aligned to the param dtype (the scratch
// dtype for `ptr`) and inside the scratch at the symbols' minima.
// Not checked: which elements a step touches (the trust boundary).
#include "kern-verify/verify_rules.h"

namespace kern::verify {
namespace {

std::string iface_name(const Kernel& k, uint64_t i) {
  return "interface arg " + std::to_string(i) + " (`" + param_type_name(k.params[i]) + "`)";
}

void check_scratch_offset(Context& ctx, const Kernel& kernel, const KernelFacts& facts, size_t s,
                          const StepArg& a, const ParamType& p, const std::string& subject) {
  const Scratch& sc = kernel.scratch[s];
  const uint32_t elem = dtype_size_bytes(p.kind == ParamKind::kBuffer ? p.dtype : sc.dtype);
  if (a.offset % elem != 0) {
    Diagnostic& d = ctx.error(Code::kScratchOffsetMisaligned,
                              subject + ": scratch offset " + std::to_string(a.offset) +
                                  " B is not a multiple of the element size " + std::to_string(elem) + " B",
                              a.offset_span.end > 0 ? a.offset_span : a.span);
    d.label = "misaligned";
  }
  const auto& bytes = facts.scratch_bytes[s];
  if (bytes && a.offset >= bytes->min) {
    Diagnostic& d = ctx.error(Code::kScratchOffsetOutOfBounds,
                              subject + ": scratch offset " + std::to_string(a.offset) + " B is past the end of `" +
                                  sc.name + "` (" + std::to_string(bytes->min) + " B at the symbols' minima)",
                              a.offset_span.end > 0 ? a.offset_span : a.span);
    d.label = "out of bounds";
  }
}

/// What the steps of one kernel have defined so far, in step order.
struct KernelFlow {
  std::vector<bool> iface_defined;    ///< interface param i holds data (`out` params start undefined)
  std::vector<bool> iface_written;    ///< some step wrote interface param i
  std::vector<bool> scratch_defined;  ///< some earlier step wrote scratch s
  std::vector<uint64_t> iface_writes;  ///< the current step's writes, applied after its reads
  std::vector<size_t> scratch_writes;
};

/// A step arg {"arg": i}: its direction against the interface param, and a
/// read of an interface `out` before any step wrote it.
void check_forwarded_arg(Context& ctx, const Kernel& kernel, const Step& step, size_t j, bool wiring_ok,
                         KernelFlow& flow, const std::string& arg_subject) {
  const StepArg& a = step.args[j];
  if (!wiring_ok) {
    flow.iface_writes.push_back(a.index);  // unknown direction: assume it writes
    return;
  }
  const ParamType& p = step.params[j];
  const ParamType& iface = kernel.params[a.index];
  if (!p.is_pointer() || !iface.is_pointer()) return;
  if (p.writes() && iface.access == Access::kIn) {
    Diagnostic& d = ctx.error(Code::kWriteThroughIn,
                              arg_subject + ": step param " + std::to_string(j) + " (`" + param_type_name(p) +
                                  "`) writes through " + iface_name(kernel, a.index),
                              a.span);
    d.label = "the interface only lets kernels read this argument";
    if (a.index < kernel.param_spans.size()) {
      d.notes.push_back(DiagnosticNote{"the interface param is declared here", kernel.param_spans[a.index], true});
    }
    return;
  }
  if (p.reads() && !flow.iface_defined[a.index]) {
    Diagnostic& d = ctx.error(Code::kOutParamReadUnwritten,
                              arg_subject + ": step param " + std::to_string(j) + " (`" + param_type_name(p) +
                                  "`) reads " + iface_name(kernel, a.index) + " before any step wrote it",
                              a.span);
    d.label = "undefined on entry";
    flow.iface_defined[a.index] = true;  // report once
  }
  if (p.writes()) flow.iface_writes.push_back(a.index);
}

/// A scratch step arg: its offset, and a read before any step wrote it.
void check_scratch_arg(Context& ctx, const Kernel& kernel, const KernelFacts& facts, const Step& step, size_t j,
                       bool wiring_ok, KernelFlow& flow, const std::string& arg_subject) {
  const StepArg& a = step.args[j];
  size_t s = 0;
  while (s < kernel.scratch.size() && kernel.scratch[s].name != a.scratch) ++s;
  if (s == kernel.scratch.size()) return;  // E0114 reported by rule 5
  if (!wiring_ok) {
    flow.scratch_writes.push_back(s);
    return;
  }
  const ParamType& p = step.params[j];
  if (!p.is_pointer()) return;  // E0128 reported by rule 5
  check_scratch_offset(ctx, kernel, facts, s, a, p, arg_subject);
  if (p.reads() && !flow.scratch_defined[s]) {
    Diagnostic& d = ctx.error(Code::kScratchReadUnwritten,
                              arg_subject + ": scratch `" + a.scratch + "` is read before any step wrote it", a.span);
    d.label = "read of unwritten scratch";
    flow.scratch_defined[s] = true;  // report once
  }
  if (p.writes()) flow.scratch_writes.push_back(s);
}

/// After the steps: interface `out` params no step wrote, and scratch no
/// step was given.
void check_unwritten_and_unused(Context& ctx, const Kernel& kernel, const KernelFacts& facts,
                                const KernelFlow& flow) {
  if (!facts.wiring_poisoned && !kernel.steps.empty()) {
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      const ParamType& p = kernel.params[i];
      if (!p.is_pointer() || p.access != Access::kOut || flow.iface_written[i]) continue;
      const SourceSpan& span = i < kernel.param_spans.size() ? kernel.param_spans[i] : kernel.params_span;
      Diagnostic& d = ctx.error(Code::kOutParamUnwritten,
                                kernel_subject(kernel) + ".params[" + std::to_string(i) + "]: `out` param " +
                                    std::to_string(i) + " is never written by a step",
                                span);
      d.label = "never written";
      d.help = "forward {\"arg\": " + std::to_string(i) + "} into an `out` or `inout` step param, or declare it `in`";
    }
  }
  for (size_t s = 0; s < kernel.scratch.size(); ++s) {
    if (facts.scratch_used[s]) continue;
    Diagnostic& d = ctx.error(Code::kScratchUnused,
                              kernel_subject(kernel) + ".impl.scratch." + kernel.scratch[s].name + ": scratch `" +
                                  kernel.scratch[s].name + "` is never passed to a step",
                              kernel.scratch[s].name_span);
    d.label = "unused";
    d.help = "remove it";
  }
}

void check_kernel(Context& ctx, size_t k) {
  const Kernel& kernel = ctx.m.kernels[k];
  KernelFacts& facts = ctx.kernels[k];
  KernelFlow flow;
  // Interface `out` params start undefined; in/inout/scalars are the caller's.
  flow.iface_defined.resize(kernel.params.size());
  flow.iface_written.assign(kernel.params.size(), false);
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    flow.iface_defined[i] = !(kernel.params[i].is_pointer() && kernel.params[i].access == Access::kOut);
  }
  flow.scratch_defined.assign(kernel.scratch.size(), false);

  for (size_t si = 0; si < kernel.steps.size(); ++si) {
    const Step& step = kernel.steps[si];
    const std::string subject = step_subject(kernel, si);
    flow.iface_writes.clear();
    flow.scratch_writes.clear();
    const bool wiring_ok = facts.step_wiring_ok[si];
    for (size_t j = 0; j < step.args.size(); ++j) {
      const StepArg& a = step.args[j];
      const std::string arg_subject = subject + ".args[" + std::to_string(j) + "]";
      if (a.kind == StepArg::Kind::kArg && a.index < kernel.params.size()) {
        check_forwarded_arg(ctx, kernel, step, j, wiring_ok, flow, arg_subject);
      } else if (a.kind == StepArg::Kind::kScratch) {
        check_scratch_arg(ctx, kernel, facts, step, j, wiring_ok, flow, arg_subject);
      }
    }
    for (uint64_t i : flow.iface_writes) flow.iface_defined[i] = flow.iface_written[i] = true;
    for (size_t s : flow.scratch_writes) flow.scratch_defined[s] = true;
  }
  check_unwritten_and_unused(ctx, kernel, facts, flow);
}

}  // namespace

void check_impl_dataflow(Context& ctx) {
  for (size_t k = 0; k < ctx.m.kernels.size(); ++k) check_kernel(ctx, k);
}

}  // namespace kern::verify
