// SPEC §4 rules 1-2: the format version and symbol bounds. A symbol with
// inverted bounds is poisoned: every range computed from it would be
// meaningless, so dependent checks skip it.
#include "kern-verify/verify_rules.h"

namespace kern::verify {

void check_symbols(Context& ctx) {
  const Manifest& m = ctx.m;
  if (m.meta.version != 2) {
    Diagnostic& d = ctx.error(Code::kVersionUnsupported,
                              "meta.version: manifest format version " + std::to_string(m.meta.version) +
                                  " is not supported (kern reads version 2)",
                              m.meta.version_span);
    d.label = "expected 2";
  }
  for (size_t i = 0; i < m.symbols.size(); ++i) {
    const Symbol& s = m.symbols[i];
    if (s.min > s.max) {
      Diagnostic& d = ctx.error(Code::kSymbolBoundsInverted,
                                "symbols." + s.name + ": min " + std::to_string(s.min) +
                                    " is greater than max " + std::to_string(s.max),
                                s.span);
      d.label = "min > max";
      ctx.symbol_ok[i] = false;
    }
  }
}

}  // namespace kern::verify
