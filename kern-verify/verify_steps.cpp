// SPEC §4 rule 5: each impl step on its own — launch geometry within CUDA
// limits at the symbol bounds, cubin/sha256 pins, extern ops, and the wiring
// of step args into step params (count, kinds, dtypes).
//
// Type rule for a forwarded interface arg ({"arg": i}): a scalar goes into the
// same scalar kind; `buffer<d>` into `buffer<d>` or an untyped `ptr`; `ptr`
// only into `ptr`. Directions are rule 6 (verify_impl_dataflow.cpp).
// Names: a cubin path stays inside the kernels directory (E0163, what
// kern-load's plan check requires, and stricter: no empty components or
// backslashes) and a non-extern symbol is a C identifier (E0164).
// Not checked here: that the cubin really has these params (kern-load's
// cuFuncGetParamInfo check, SPEC §6).
#include <cctype>
#include <map>

#include "common/extern_ops.h"
#include "kern-verify/verify_rules.h"

namespace kern::verify {
namespace {

constexpr uint64_t kMaxBlockThreads = 1024;
constexpr uint32_t kMaxBlockZ = 64;
constexpr uint64_t kMaxGridX = (uint64_t{1} << 31) - 1;
constexpr uint64_t kMaxGridYZ = 65535;
/// Per-block dynamic shared memory after the opt-in attribute (227 KiB, sm_90/sm_100).
constexpr uint64_t kMaxDynamicSharedMem = 232448;

bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Whether interface param `iface` may be forwarded into step param `step`
/// (kinds and dtypes only; rule 6 checks directions).
bool forward_compatible(const ParamType& iface, const ParamType& step) {
  if (iface.is_scalar() || step.is_scalar()) return iface.is_scalar() && step.is_scalar() && iface.kind == step.kind;
  if (step.kind == ParamKind::kPtr) return true;
  return iface.kind == ParamKind::kBuffer && iface.dtype == step.dtype;
}

/// Why `path` is not a relative path of non-empty components inside the
/// kernels directory; empty when it is one.
std::string cubin_path_problem(const std::string& path) {
  if (path.empty()) return "is empty";
  if (path[0] == '/') return "is absolute";
  if (path.find('\\') != std::string::npos) return "contains a backslash";
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) return "contains a control character";
  }
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty()) return "has an empty component";
    if (part == "..") return "has a `..` component";
    if (slash == std::string::npos) return "";
    start = slash + 1;
  }
}

/// `s` with control characters written as \xHH, for a one-line message.
std::string visible(const std::string& s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

/// Whether `symbol` is a C identifier: [A-Za-z_][A-Za-z0-9_]*.
bool is_identifier(const std::string& symbol) {
  if (symbol.empty() || std::isdigit(static_cast<unsigned char>(symbol[0]))) return false;
  for (unsigned char c : symbol) {
    if (!(std::isalnum(c) || c == '_') || c >= 0x80) return false;
  }
  return true;
}

void check_names(Context& ctx, const Step& step, const std::string& subject) {
  if (step.cubin && !step.is_extern()) {  // an extern step's cubin is E0132 already
    const std::string problem = cubin_path_problem(*step.cubin);
    if (!problem.empty()) {
      Diagnostic& d = ctx.error(Code::kCubinPathInvalid,
                                subject + ": cubin path `" + visible(*step.cubin) + "` " + problem, step.cubin_span);
      d.label = "not a relative path inside the kernels directory";
      d.help = "name the file relative to the kernels directory, with `/` between components (\"attn/pa.fatbin\")";
    }
  }
  if (!step.is_extern() && !is_identifier(step.symbol)) {
    Diagnostic& d = ctx.error(Code::kStepSymbolInvalid,
                              subject + ": symbol `" + visible(step.symbol) + "` is not a kernel entry name",
                              step.symbol_span);
    d.label = step.symbol.empty() ? "empty" : "not a C identifier";
    d.help = "an entry symbol has letters, digits and `_` only (no blanks), e.g. `kern_rmsnorm_bf16`";
  }
}

void check_geometry(Context& ctx, const Step& step, const std::string& subject) {
  const uint64_t threads = uint64_t{step.block[0]} * step.block[1] * step.block[2];
  if (step.block[0] == 0 || step.block[1] == 0 || step.block[2] == 0) {
    Diagnostic& d = ctx.error(Code::kBlockDimZero, subject + ": block [" + std::to_string(step.block[0]) + ", " +
                                                       std::to_string(step.block[1]) + ", " +
                                                       std::to_string(step.block[2]) + "] has a zero dimension",
                              step.block_span);
    d.label = "every dimension must be >= 1";
  } else if (threads > kMaxBlockThreads) {
    Diagnostic& d = ctx.error(Code::kBlockTooManyThreads,
                              subject + ": block has " + std::to_string(threads) + " threads, over the limit of " +
                                  std::to_string(kMaxBlockThreads),
                              step.block_span);
    d.label = "x * y * z > " + std::to_string(kMaxBlockThreads);
  }
  if (step.block[2] > kMaxBlockZ) {
    Diagnostic& d = ctx.error(
        Code::kBlockZTooLarge,
        subject + ": block z " + std::to_string(step.block[2]) + " exceeds the limit of " + std::to_string(kMaxBlockZ),
        step.block_span);
    d.label = "z > " + std::to_string(kMaxBlockZ);
  }
  static const char* kAxis[3] = {"x", "y", "z"};
  for (size_t a = 0; a < step.grid.size() && a < 3; ++a) {
    const Expr& g = step.grid[a];
    auto r = ctx.eval_range(g, subject + ".grid[" + std::to_string(a) + "]");
    if (!r) continue;
    if (r->min == 0) {
      Diagnostic& d = ctx.error(Code::kGridZeroAtMin,
                                subject + ": grid " + kAxis[a] + " `" + g.to_string() +
                                    "` is 0 at the symbols' minima",
                                g.span);
      d.label = "zero blocks";
    }
    const uint64_t limit = a == 0 ? kMaxGridX : kMaxGridYZ;
    if (r->max > limit) {
      Diagnostic& d = ctx.error(Code::kGridTooLargeAtMax,
                                subject + ": grid " + kAxis[a] + " `" + g.to_string() + "` is " +
                                    std::to_string(r->max) + " at the symbols' maxima, over the limit " +
                                    std::to_string(limit),
                                g.span);
      d.label = "too many blocks";
    }
  }
  if (step.shared_mem) {
    auto r = ctx.eval_range(*step.shared_mem, subject + ".shared_mem");
    if (r && r->max > kMaxDynamicSharedMem) {
      Diagnostic& d = ctx.error(Code::kSharedMemTooLarge,
                                subject + ": shared_mem " + std::to_string(r->max) + " B exceeds the opt-in limit " +
                                    std::to_string(kMaxDynamicSharedMem) + " B",
                                step.shared_mem->span);
      d.label = "at the symbols' maxima";
    }
  }
}

void check_extern(Context& ctx, const Step& step, const std::string& subject) {
  const ExternOpInfo* op = find_extern_op(step.symbol);
  if (op == nullptr) {
    Diagnostic& d = ctx.error(Code::kExternUnknown, subject + ": unknown extern op `" + step.symbol + "`",
                              step.symbol_span);
    d.label = "not a runtime built-in";
    std::vector<std::string_view> known;
    for (const ExternOpInfo& o : kExternOps) known.push_back(o.symbol);
    if (auto best = closest_name(step.symbol, known)) {
      d.help = "a built-in with a similar name exists: `" + *best + "`";
    } else {
      d.help = "known extern ops: " + extern_op_list();
    }
  } else if (!extern_op_params_match(*op, step.params)) {
    Diagnostic& d = ctx.error(Code::kExternParams,
                              subject + ": params do not match the ABI of `" + step.symbol + "`",
                              step.params_span);
    d.label = "differs from the built-in";
    d.help = "`" + step.symbol + "` takes [" + extern_op_params_text(*op) + "]";
  }
  if (op != nullptr && op->collective && ctx.m.meta.world <= 1) {
    Diagnostic& d = ctx.error(Code::kCollectiveWithoutWorld,
                              subject + ": collective `" + step.symbol + "` in a manifest of one rank",
                              step.symbol_span);
    d.label = "needs meta.world > 1";
    d.help = "declare the world size in meta.world, or use no collective";
  }
  if (step.cubin) {
    Diagnostic& d = ctx.error(Code::kExternCubin,
                              subject + ": extern step `" + step.symbol + "` pins cubin `" + *step.cubin + "`",
                              step.cubin_span);
    d.label = "built-ins are not loaded from a cubin";
    d.help = "remove `cubin` (and `sha256`)";
  }
}

/// {"arg": i} into step param `p` (null when the counts differ): the index
/// exists and the types may be forwarded. Returns false when the index does
/// not resolve.
bool check_forwarded_step_arg(Context& ctx, const Kernel& kernel, KernelFacts& facts, const StepArg& a,
                              const ParamType* p, size_t j, const std::string& arg_subject) {
  if (a.index >= kernel.params.size()) {
    Diagnostic& d = ctx.error(Code::kInterfaceArgOutOfRange,
                              arg_subject + ": interface arg " + std::to_string(a.index) +
                                  " does not exist (the interface has " + std::to_string(kernel.params.size()) +
                                  " params)",
                              a.span);
    d.label = "index out of range";
    if (!kernel.params.empty()) d.help = "valid indices are 0.." + std::to_string(kernel.params.size() - 1);
    return false;
  }
  const ParamType& iface = kernel.params[a.index];
  if (p && !forward_compatible(iface, *p)) {
    Diagnostic& d = ctx.error(Code::kStepArgType,
                              arg_subject + ": interface arg " + std::to_string(a.index) + " is `" +
                                  param_type_name(iface) + "` but step param " + std::to_string(j) + " is `" +
                                  param_type_name(*p) + "`",
                              a.span);
    d.label = "incompatible types";
    DiagnosticNote n{"the interface param is declared here",
                     kernel.param_spans.size() > a.index ? kernel.param_spans[a.index] : kernel.params_span, true};
    d.notes.push_back(n);
    facts.wiring_poisoned = true;  // what this step writes is unclear: no E0134 cascade
  }
  return true;
}

/// A scratch into step param `p` (null when the counts differ): the scratch
/// exists (marked used) and its dtype fits. Returns false when it does not
/// resolve.
bool check_scratch_step_arg(Context& ctx, const Kernel& kernel, KernelFacts& facts, const StepArg& a,
                            const ParamType* p, const std::string& arg_subject) {
  size_t s = 0;
  while (s < kernel.scratch.size() && kernel.scratch[s].name != a.scratch) ++s;
  if (s == kernel.scratch.size()) {
    Diagnostic& d = ctx.error(Code::kUnknownScratch, arg_subject + ": unknown scratch `" + a.scratch + "`", a.span);
    d.label = "not declared in impl.scratch";
    std::vector<std::string_view> names;
    for (const Scratch& sc : kernel.scratch) names.push_back(sc.name);
    if (auto best = closest_name(a.scratch, names)) {
      d.help = "a scratch with a similar name exists: `" + *best + "`";
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == *best) facts.scratch_used[i] = true;  // the typo meant it: no E0139
      }
    }
    return false;
  }
  facts.scratch_used[s] = true;
  const Scratch& sc = kernel.scratch[s];
  if (p && !(p->kind == ParamKind::kPtr || (p->kind == ParamKind::kBuffer && p->dtype == sc.dtype))) {
    Diagnostic& d = ctx.error(Code::kStepScratchType,
                              arg_subject + ": scratch `" + sc.name + "` (" + std::string(dtype_name(sc.dtype)) +
                                  ") passed to step param `" + param_type_name(*p) + "`",
                              a.span);
    d.label = "incompatible types";
    d.help = "a scratch goes into `buffer<" + std::string(dtype_name(sc.dtype)) + ">` or `ptr`";
  }
  return true;
}

/// A literal into step param `p` (null when the counts differ): same scalar kind.
void check_literal_step_arg(Context& ctx, const StepArg& a, const ParamType* p, const std::string& arg_subject) {
  if (p && (p->is_pointer() || literal_param_kind(a.kind) != p->kind)) {
    Diagnostic& d = ctx.error(Code::kStepLiteralKind,
                              arg_subject + ": " + std::string(step_arg_kind_name(a.kind)) +
                                  " passed to step param `" + param_type_name(*p) + "`",
                              a.span);
    d.label = "kind differs";
    if (p->is_scalar()) d.help = "write the literal as {\"" + param_type_name(*p) + "\": ...}";
  }
}

void check_args(Context& ctx, size_t k, size_t si) {
  const Kernel& kernel = ctx.m.kernels[k];
  const Step& step = kernel.steps[si];
  KernelFacts& facts = ctx.kernels[k];
  const std::string subject = step_subject(kernel, si);
  const bool count_ok = step.args.size() == step.params.size();
  if (!count_ok) {
    Diagnostic& d = ctx.error(Code::kStepArgCount,
                              subject + ": " + std::to_string(step.args.size()) + " args for " +
                                  std::to_string(step.params.size()) + " params",
                              step.args_span);
    d.label = "expected " + std::to_string(step.params.size()) + " args";
    facts.wiring_poisoned = true;
  }
  bool all_resolved = true;
  for (size_t j = 0; j < step.args.size(); ++j) {
    const StepArg& a = step.args[j];
    const std::string arg_subject = subject + ".args[" + std::to_string(j) + "]";
    const ParamType* p = count_ok ? &step.params[j] : nullptr;
    switch (a.kind) {
      case StepArg::Kind::kArg:
        all_resolved = check_forwarded_step_arg(ctx, kernel, facts, a, p, j, arg_subject) && all_resolved;
        break;
      case StepArg::Kind::kScratch:
        all_resolved = check_scratch_step_arg(ctx, kernel, facts, a, p, arg_subject) && all_resolved;
        break;
      default: check_literal_step_arg(ctx, a, p, arg_subject); break;
    }
  }
  if (!all_resolved) facts.wiring_poisoned = true;
  facts.step_wiring_ok[si] = count_ok && all_resolved;
}

}  // namespace

void check_steps(Context& ctx) {
  struct Pin {
    std::string sha256;  // lower case; empty when that step did not pin one
    SourceSpan span;
  };
  std::map<std::string, Pin> pins;  // cubin path -> first sha256 seen
  for (size_t k = 0; k < ctx.m.kernels.size(); ++k) {
    const Kernel& kernel = ctx.m.kernels[k];
    if (kernel.steps.empty()) {
      Diagnostic& d = ctx.error(Code::kImplNoSteps, kernel_subject(kernel) + ": impl has no steps",
                                kernel.steps_span.end > 0 ? kernel.steps_span : kernel.span);
      d.label = "empty implementation";
    }
    for (size_t si = 0; si < kernel.steps.size(); ++si) {
      const Step& step = kernel.steps[si];
      const std::string subject = step_subject(kernel, si);
      check_names(ctx, step, subject);
      if (step.is_extern()) {
        check_extern(ctx, step, subject);
        // Geometry is ignored for built-ins; evaluate only to resolve symbols.
        for (size_t a = 0; a < step.grid.size(); ++a) {
          (void)ctx.eval_range(step.grid[a], subject + ".grid[" + std::to_string(a) + "]");
        }
        if (step.shared_mem) (void)ctx.eval_range(*step.shared_mem, subject + ".shared_mem");
      } else {
        check_geometry(ctx, step, subject);
        if (!step.cubin && !step.sha256) {  // a sha256 without a cubin is E0124 already
          Diagnostic& d = ctx.warning(Code::kStepWithoutCubin,
                                      subject + ": step `" + step.symbol + "` is not pinned to a cubin",
                                      step.symbol_span);
          d.label = "resolved in any loaded cubin";
          d.help = "add \"cubin\" and \"sha256\" to pin the artifact; kern's examples/ generators write them with "
                   "--kernels-dir DIR (by default build/kernels when it exists)";
        }
      }
      if (step.sha256) {
        if (!is_hex64(*step.sha256)) {
          Diagnostic& d = ctx.error(Code::kSha256Malformed,
                                    subject + ": sha256 `" + *step.sha256 + "` is not 64 hex digits (" +
                                        std::to_string(step.sha256->size()) + " characters)",
                                    step.sha256_span);
          d.label = "malformed";
        } else if (!step.cubin) {
          Diagnostic& d = ctx.error(Code::kSha256WithoutCubin,
                                    subject + ": sha256 given without a cubin", step.sha256_span);
          d.label = "pins nothing";
          d.help = "add the \"cubin\" file it is the digest of, or remove it";
        } else {
          const std::string digest = lower(*step.sha256);
          auto [it, inserted] = pins.emplace(*step.cubin, Pin{digest, step.sha256_span});
          if (!inserted && !it->second.sha256.empty() && it->second.sha256 != digest) {
            Diagnostic& d = ctx.error(Code::kCubinSha256Conflict,
                                      subject + ": cubin `" + *step.cubin +
                                          "` is pinned with a different sha256 elsewhere",
                                      step.sha256_span);
            d.label = "conflicting digest";
            d.notes.push_back(DiagnosticNote{"first pinned here", it->second.span, true});
          } else if (!inserted && it->second.sha256.empty()) {
            it->second = Pin{digest, step.sha256_span};
          }
        }
      } else if (step.cubin) {
        pins.emplace(*step.cubin, Pin{"", step.cubin_span});
      }
      check_args(ctx, k, si);
    }
  }
}

}  // namespace kern::verify
