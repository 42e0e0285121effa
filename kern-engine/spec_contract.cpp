// Resolving and checking the speculative caller contract of a plan (spec_contract.h).
#include "kern-engine/spec_contract.h"

#include <string>

namespace kern::engine {

namespace {

Error spec_error(const load::PlanFile& plan, const std::string& what) {
  return make_error(ErrorKind::kManifest,
                    plan.path() + ": " + what + " (the speculative caller contract, docs/speculative.md)");
}

/// The single-node shape dimension `d` of buffer `b`: (is the tokens symbol, constant value).
struct Dim {
  bool tokens = false;
  uint64_t value = 0;
};
Dim dim(const plan::Buffer& b, uint32_t d, uint32_t tokens_symbol) {
  const plan::ExprNode* n = b.shape()->Get(d)->nodes()->Get(0);
  if (b.shape()->Get(d)->nodes()->size() != 1) return {};
  if (n->op() == plan::ExprOp::sym) return {n->operand() == tokens_symbol, 0};
  if (n->op() == plan::ExprOp::const_) return {false, n->operand()};
  return {};
}

}  // namespace

Result<SpecContract> resolve_spec_contract(const load::PlanFile& plan, const CausalLmContract& c) {
  const plan::Plan& p = plan.plan();
  if (p.spec() == nullptr)
    return spec_error(plan, "the plan has no meta.spec: it is not a speculative manifest (generate one with "
                            "examples/gen_qwen3_dspark_manifest.py)");
  SpecContract s;
  s.block = p.spec()->block();
  s.mask_token = p.spec()->mask_token();
  if (s.block < 2 || s.block > c.tokens_max)
    return spec_error(plan, "meta.spec.block is " + std::to_string(s.block) + "; must be in [2, " +
                                std::to_string(c.tokens_max) + "] (the tokens bound)");
  if (s.mask_token < 0 || static_cast<uint64_t>(s.mask_token) >= c.vocab)
    return spec_error(plan, "meta.spec.mask_token is " + std::to_string(s.mask_token) +
                                "; must be a token id in [0, " + std::to_string(c.vocab) + ")");
  struct Prog {
    uint32_t* out;
    const char* name;
  };
  for (const Prog& g : {Prog{&s.decode_spec, "decode_spec"}, Prog{&s.verify, "verify"}, Prog{&s.draft, "draft"},
                        Prog{&s.draft_precompute, "draft_precompute"}}) {
    const int i = plan.find_program(g.name);
    if (i < 0) return spec_error(plan, std::string("the plan has no program '") + g.name + "'");
    *g.out = static_cast<uint32_t>(i);
  }
  struct Buf {
    uint32_t* out;
    const char* name;
    plan::BufferClass cls;
    bool tokens;     // shape [tokens], else [block - 1]
  };
  for (const Buf& b : {Buf{&s.draft_ids, "draft_ids", plan::BufferClass::input, true},
                       Buf{&s.draft_tokens, "draft_tokens", plan::BufferClass::output, false}}) {
    const int i = plan.find_buffer(b.name);
    if (i < 0) return spec_error(plan, std::string("the plan has no buffer '") + b.name + "'");
    const plan::Buffer& buf = *p.buffers()->Get(static_cast<uint32_t>(i));
    const std::string want = b.tokens ? "[tokens]" : "[" + std::to_string(s.block - 1) + "]";
    bool ok = buf.dtype() == plan::DType::i64 && buf.shape()->size() == 1;
    if (ok) {
      const Dim d = dim(buf, 0, c.tokens_symbol);
      ok = b.tokens ? d.tokens : (!d.tokens && d.value == s.block - 1);
    }
    if (!ok) return spec_error(plan, std::string("buffer '") + b.name + "' must be i64 " + want);
    if (buf.class_() != b.cls)
      return spec_error(plan, std::string("buffer '") + b.name + "' has the wrong class (want " +
                                  (b.cls == plan::BufferClass::input ? "input" : "output") + ")");
    *b.out = static_cast<uint32_t>(i);
  }
  return s;
}

}  // namespace kern::engine
