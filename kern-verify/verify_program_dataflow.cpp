// SPEC §4 rule 8: data flow of each program over whole buffers, in dispatch
// order, using the interface param directions (`in` reads, `out` writes,
// `inout` both; a dispatch reads all its arguments before it writes any).
//
// - inputs, weights, carries and states count as initialised; workspace and
//   output buffers must be written by an earlier dispatch of the same program
//   before one reads them (E0149, once per buffer and program);
// - no dispatch writes an input (E0150) or a weight (E0151);
// - every output (E0152) and carry (E0153) is written by some program;
// - a program writing no output, carry or state has no effect (W0002).
// A write anywhere in a buffer (any offset) counts as writing all of it:
// views are not tracked element by element. A dispatch rule 7 could not match
// to its interface is assumed to write every buffer it names (no cascades).
#include "kern-verify/verify_rules.h"

namespace kern::verify {

namespace {

/// One program's state while its dispatches are walked in order.
struct ProgramFlow {
  std::vector<bool> defined;               ///< buffer b holds data at this point of the program
  std::vector<bool>& written_somewhere;    ///< buffer b is written by some program (borrowed, all programs)
  bool has_effect = false;                 ///< some dispatch wrote an output, carry or state
};

/// A buffer one dispatch argument writes.
struct Write {
  size_t buffer;
  size_t arg;
};

/// Dispatch `di`'s reads (a read before any write is E0149) and the buffers
/// it writes, applied by apply_writes after all its reads.
std::vector<Write> check_dispatch_reads(Context& ctx, size_t pi, size_t di, ProgramFlow& flow) {
  const Manifest& m = ctx.m;
  const Program& prog = m.programs[pi];
  const Dispatch& disp = prog.dispatches[di];
  const bool ok = ctx.dispatch_ok[pi][di];
  const Kernel* kernel = ok ? m.find_kernel(disp.kernel) : nullptr;
  std::vector<Write> writes;
  for (size_t j = 0; j < disp.args.size(); ++j) {
    const Arg& a = disp.args[j];
    if (a.kind == Arg::Kind::kState) {
      if (!ok || kernel->params[j].writes()) flow.has_effect = true;
      continue;
    }
    if (a.kind != Arg::Kind::kBuf) continue;
    auto it = ctx.names.buffers.find(a.name);
    if (it == ctx.names.buffers.end()) continue;  // E0112 reported by rule 7
    const size_t b = it->second;
    if (!ok) {  // unknown effect: assume written, stay quiet
      flow.defined[b] = flow.written_somewhere[b] = true;
      flow.has_effect = true;
      continue;
    }
    const ParamType& p = kernel->params[j];
    if (!p.is_pointer()) continue;  // E0141 reported by rule 7
    if (p.reads() && !flow.defined[b]) {
      const Buffer& buf = m.buffers[b];
      Diagnostic& d = ctx.error(Code::kReadBeforeWrite,
                                dispatch_subject(prog, di) + ".args[" + std::to_string(j) + "]: " +
                                    std::string(buffer_class_name(buf.cls)) + " buffer `" + buf.name +
                                    "` is read before any dispatch of program `" + prog.name + "` wrote it",
                                a.span);
      d.label = "read of unwritten buffer";
      d.notes.push_back(DiagnosticNote{"the buffer is declared here", buf.name_span, true});
      flow.defined[b] = true;  // report once per program
    }
    if (p.writes()) writes.push_back(Write{b, j});
  }
  return writes;
}

/// Dispatch `di`'s writes: none into an input (E0150) or a weight (E0151).
void apply_writes(Context& ctx, size_t pi, size_t di, const std::vector<Write>& writes, ProgramFlow& flow) {
  const Manifest& m = ctx.m;
  const Program& prog = m.programs[pi];
  const Dispatch& disp = prog.dispatches[di];
  for (const Write& w : writes) {
    const Buffer& buf = m.buffers[w.buffer];
    const Arg& a = disp.args[w.arg];
    if (buf.cls == BufferClass::kInput || buf.cls == BufferClass::kWeight) {
      const Kernel* kernel = m.find_kernel(disp.kernel);  // the dispatch matched it (writes need its params)
      const std::string subject = dispatch_subject(prog, di) + ".args[" + std::to_string(w.arg) + "]";
      const bool input = buf.cls == BufferClass::kInput;
      Diagnostic& d = ctx.error(input ? Code::kWriteToInput : Code::kWriteToWeight,
                                subject + ": " + (input ? "input" : "weight") + " buffer `" + buf.name +
                                    "` is written through `" + param_type_name(kernel->params[w.arg]) + "`",
                                a.span);
      d.label = input ? "inputs are written only by the caller" : "weights are read-only";
      continue;
    }
    flow.defined[w.buffer] = true;
    flow.written_somewhere[w.buffer] = true;
    if (buf.cls == BufferClass::kOutput || buf.cls == BufferClass::kCarry) flow.has_effect = true;
  }
}

/// Outputs (E0152) and carries (E0153) that no program writes.
void check_never_written(Context& ctx, const std::vector<bool>& written_somewhere) {
  const Manifest& m = ctx.m;
  for (size_t b = 0; b < m.buffers.size(); ++b) {
    const Buffer& buf = m.buffers[b];
    if (written_somewhere[b] || !ctx.buffer_used[b]) continue;  // unused: rule 9 says so
    if (buf.cls == BufferClass::kOutput) {
      Diagnostic& d = ctx.error(Code::kOutputNeverWritten,
                                "buffers." + buf.name + ": output `" + buf.name + "` is never written by a program",
                                buf.name_span);
      d.label = "never written";
    } else if (buf.cls == BufferClass::kCarry) {
      Diagnostic& d = ctx.error(Code::kCarryNeverWritten,
                                "buffers." + buf.name + ": carry `" + buf.name + "` is never written by a program",
                                buf.name_span);
      d.label = "never written";
    }
  }
}

}  // namespace

void check_program_dataflow(Context& ctx) {
  const Manifest& m = ctx.m;
  std::vector<bool> written_somewhere(m.buffers.size(), false);
  for (size_t pi = 0; pi < m.programs.size(); ++pi) {
    const Program& prog = m.programs[pi];
    ProgramFlow flow{std::vector<bool>(m.buffers.size(), false), written_somewhere};
    for (size_t b = 0; b < m.buffers.size(); ++b) {
      const BufferClass c = m.buffers[b].cls;
      flow.defined[b] = c == BufferClass::kInput || c == BufferClass::kWeight || c == BufferClass::kCarry;
    }
    for (size_t di = 0; di < prog.dispatches.size(); ++di) {
      const std::vector<Write> writes = check_dispatch_reads(ctx, pi, di, flow);
      apply_writes(ctx, pi, di, writes, flow);
    }
    if (!flow.has_effect) {
      Diagnostic& d = ctx.warning(Code::kProgramWithoutEffect,
                                  "programs." + prog.name + ": program `" + prog.name +
                                      "` writes no output, carry or state",
                                  prog.name_span);
      d.label = "no visible effect";
    }
  }
  check_never_written(ctx, written_somewhere);
}

}  // namespace kern::verify
