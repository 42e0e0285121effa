// SPEC §4 rules 1-2: the format version, meta.spec's ranges, meta.world and symbol bounds. A symbol with
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
  // meta.spec: kern-run's speculative caller needs block in [2, tokens max]
  // and a token id as mask_token (the vocabulary bound is the model's).
  if (const auto& spec = m.meta.spec) {
    const Symbol* tokens = nullptr;
    for (const Symbol& s : m.symbols) {
      if (s.name == "tokens") tokens = &s;
    }
    const uint64_t max_block = tokens != nullptr ? tokens->max : UINT64_MAX;
    if (spec->block < 2 || spec->block > max_block) {
      Diagnostic& d = ctx.error(Code::kSpecOutOfRange,
                                "meta.spec.block: " + std::to_string(spec->block) + " rows; must be in [2, " +
                                    (tokens != nullptr ? std::to_string(max_block) + "] (the `tokens` symbol's max)"
                                                       : std::string("...]")),
                                spec->block_span.end > 0 ? spec->block_span : spec->span);
      d.label = spec->block < 2 ? "fewer than 2 rows" : "more rows than `tokens` allows";
      d.help = "one draft/verify call takes the accepted token and block - 1 drafted rows";
    }
    if (spec->mask_token < 0 || spec->mask_token > INT32_MAX) {
      Diagnostic& d = ctx.error(Code::kSpecOutOfRange,
                                "meta.spec.mask_token: " + std::to_string(spec->mask_token) +
                                    " is not a token id (must be in [0, 2147483647] and below the vocabulary size)",
                                spec->mask_token_span.end > 0 ? spec->mask_token_span : spec->span);
      d.label = "not a token id";
    }
  }
  if (m.meta.world < 1 || m.meta.world > kMaxWorld) {
    Diagnostic& d = ctx.error(Code::kWorldOutOfRange,
                              "meta.world: " + std::to_string(m.meta.world) + " ranks; must be in [1, " +
                                  std::to_string(kMaxWorld) + "]",
                              m.meta.world_span.end > 0 ? m.meta.world_span : m.meta.span);
    d.label = m.meta.world < 1 ? "no rank" : "more ranks than kern-run starts";
    d.help = "the world size is the tensor-parallel degree the generator sharded for (--tp N)";
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
