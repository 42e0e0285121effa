// SPEC §4 rule 3: states are opaque bytes with exactly one size (per token or
// fixed) and a power-of-two alignment of at most kMaxStateAlign (a page). Whether a per-token state fits the
// device is a load-time question (the capacity is the runtime's choice).
#include "kern-verify/verify_rules.h"

#include "common/plan_format.h"

namespace kern::verify {

void check_states(Context& ctx) {
  for (const State& s : ctx.m.states) {
    const std::string subject = "states." + s.name;
    if (s.bytes_per_token == 0 && s.bytes_fixed == 0) {
      Diagnostic& d = ctx.error(Code::kStateSizeMissing,
                                subject + ": neither bytes_per_token nor bytes_fixed is non-zero", s.span);
      d.label = "no size";
      d.help = "set bytes_per_token (scaled by the capacity) or bytes_fixed";
    } else if (s.bytes_per_token != 0 && s.bytes_fixed != 0) {
      Diagnostic& d = ctx.error(Code::kStateSizeAmbiguous,
                                subject + ": bytes_per_token " + std::to_string(s.bytes_per_token) +
                                    " and bytes_fixed " + std::to_string(s.bytes_fixed) + " are exclusive",
                                s.span);
      d.label = "both sizes set";
      d.help = "keep exactly one of them";
    }
    const SourceSpan& align_at = s.align_span.end > 0 ? s.align_span : s.span;
    if (s.align == 0 || (s.align & (s.align - 1)) != 0) {
      Diagnostic& d = ctx.error(Code::kStateAlignNotPowerOfTwo,
                                subject + ": align " + std::to_string(s.align) + " B is not a power of two",
                                align_at);
      d.label = "not a power of two";
    } else if (s.align > kMaxStateAlign) {
      // Accepted, such an alignment reached the runtime as "out of host memory".
      Diagnostic& d = ctx.error(Code::kStateAlignNotPowerOfTwo,
                                subject + ": align " + std::to_string(s.align) + " B exceeds the limit of " +
                                    std::to_string(kMaxStateAlign) + " B",
                                align_at);
      d.label = "larger than a page";
      d.help = "use an alignment of at most " + std::to_string(kMaxStateAlign) + " B (256 suits every kernel)";
    }
  }
}

}  // namespace kern::verify
