// SPEC §4 rule 9: every declaration is used. Usage was recorded while earlier
// rules resolved references (even references inside a broken dispatch count,
// so one typo does not also report its arguments as unused). Unused scratch
// is rule 6 (verify_impl_dataflow.cpp).
#include "kern-verify/verify_rules.h"

namespace kern::verify {
namespace {

template <typename Entry>
void report_unused(Context& ctx, const std::vector<Entry>& entries, const std::vector<bool>& used,
                   Code code, const char* section, const char* what) {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (used[i]) continue;
    Diagnostic& d = ctx.error(code,
                              std::string(section) + "." + entries[i].name + ": " + what +
                                  " `" + entries[i].name + "` is never used",
                              entries[i].name_span);
    d.label = "unused";
    d.help = std::string("remove it, or reference it where it is needed");
  }
}

}  // namespace

void check_unused(Context& ctx) {
  report_unused(ctx, ctx.m.symbols, ctx.symbol_used, Code::kUnusedSymbol, "symbols", "symbol");
  report_unused(ctx, ctx.m.states, ctx.state_used, Code::kUnusedState, "states", "state");
  report_unused(ctx, ctx.m.buffers, ctx.buffer_used, Code::kUnusedBuffer, "buffers", "buffer");
  report_unused(ctx, ctx.m.kernels, ctx.kernel_used, Code::kUnusedKernel, "kernels", "kernel");
}

}  // namespace kern::verify
