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

void check_program_dataflow(Context& ctx) {
  const Manifest& m = ctx.m;
  std::vector<bool> written_somewhere(m.buffers.size(), false);
  for (size_t pi = 0; pi < m.programs.size(); ++pi) {
    const Program& prog = m.programs[pi];
    std::vector<bool> defined(m.buffers.size(), false);
    for (size_t b = 0; b < m.buffers.size(); ++b) {
      const BufferClass c = m.buffers[b].cls;
      defined[b] = c == BufferClass::kInput || c == BufferClass::kWeight || c == BufferClass::kCarry;
    }
    bool has_effect = false;
    for (size_t di = 0; di < prog.dispatches.size(); ++di) {
      const Dispatch& disp = prog.dispatches[di];
      const bool ok = ctx.dispatch_ok[pi][di];
      const Kernel* kernel = ok ? m.find_kernel(disp.kernel) : nullptr;
      struct Write { size_t buffer; size_t arg; };
      std::vector<Write> writes;
      for (size_t j = 0; j < disp.args.size(); ++j) {
        const Arg& a = disp.args[j];
        if (a.kind == Arg::Kind::kState) {
          if (!ok || kernel->params[j].writes()) has_effect = true;
          continue;
        }
        if (a.kind != Arg::Kind::kBuf) continue;
        auto it = ctx.names.buffers.find(a.name);
        if (it == ctx.names.buffers.end()) continue;  // E0112 reported by rule 7
        const size_t b = it->second;
        if (!ok) {  // unknown effect: assume written, stay quiet
          defined[b] = written_somewhere[b] = true;
          has_effect = true;
          continue;
        }
        const ParamType& p = kernel->params[j];
        if (!p.is_pointer()) continue;  // E0141 reported by rule 7
        if (p.reads() && !defined[b]) {
          const Buffer& buf = m.buffers[b];
          Diagnostic& d = ctx.error(Code::kReadBeforeWrite,
                                    dispatch_subject(prog, di) + ".args[" + std::to_string(j) + "]: " +
                                        std::string(buffer_class_name(buf.cls)) + " buffer `" + buf.name +
                                        "` is read before any dispatch of program `" + prog.name + "` wrote it",
                                    a.span);
          d.label = "read of unwritten buffer";
          d.notes.push_back(DiagnosticNote{"the buffer is declared here", buf.name_span, true});
          defined[b] = true;  // report once per program
        }
        if (p.writes()) writes.push_back(Write{b, j});
      }
      for (const Write& w : writes) {
        const Buffer& buf = m.buffers[w.buffer];
        const Arg& a = disp.args[w.arg];
        const std::string subject = dispatch_subject(prog, di) + ".args[" + std::to_string(w.arg) + "]";
        if (buf.cls == BufferClass::kInput || buf.cls == BufferClass::kWeight) {
          const bool input = buf.cls == BufferClass::kInput;
          Diagnostic& d = ctx.error(input ? Code::kWriteToInput : Code::kWriteToWeight,
                                    subject + ": " + (input ? "input" : "weight") + " buffer `" + buf.name +
                                        "` is written through `" + param_type_name(kernel->params[w.arg]) + "`",
                                    a.span);
          d.label = input ? "inputs are written only by the caller" : "weights are read-only";
          continue;
        }
        defined[w.buffer] = true;
        written_somewhere[w.buffer] = true;
        if (buf.cls == BufferClass::kOutput || buf.cls == BufferClass::kCarry) has_effect = true;
      }
    }
    if (!has_effect) {
      Diagnostic& d = ctx.warning(Code::kProgramWithoutEffect,
                                  "programs." + prog.name + ": program `" + prog.name +
                                      "` writes no output, carry or state",
                                  prog.name_span);
      d.label = "no visible effect";
    }
  }
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

}  // namespace kern::verify
