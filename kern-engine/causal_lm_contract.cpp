// The causal-LM caller contract of a plan, resolved to indices (causal_lm_contract.h).
#include "kern-engine/causal_lm_contract.h"

#include <cstdint>
#include <string>

#include "kern-load/plan_expr.h"

namespace kern::engine {

namespace {

Error contract_error(const load::PlanFile& plan, const std::string& what) {
  return make_error(ErrorKind::kManifest,
                    plan.path() + ": " + what + " (the causal-LM caller contract, docs/causal-lm-manifest.md)");
}

/// Shape pattern of a contract buffer: each dim is the `tokens` symbol, a
/// fixed constant, any constant (kAnyConst) or either (kTokensOrAnyConst).
enum class DimRule { kTokens, kConst, kAnyConst, kTokensOrAnyConst };
struct DimSpec {
  DimRule rule;
  uint64_t value = 0;
};

Result<uint32_t> find_buffer(const load::PlanFile& plan, const char* name, plan::DType dtype,
                             std::initializer_list<DimSpec> shape, uint32_t tokens_symbol) {
  int i = plan.find_buffer(name);
  if (i < 0) return contract_error(plan, std::string("the plan has no buffer '") + name + "'");
  const auto* b = plan.plan().buffers()->Get(static_cast<uint32_t>(i));
  if (b->dtype() != dtype)
    return contract_error(plan, std::string("buffer '") + name + "' has dtype " + load::plan_dtype_name(b->dtype()) +
                                    ", kern-run needs " + load::plan_dtype_name(dtype));
  bool ok = b->shape()->size() == shape.size();
  size_t d = 0;
  for (const DimSpec& spec : shape) {
    if (!ok) break;
    const plan::ExprNode* n = b->shape()->Get(static_cast<uint32_t>(d++))->nodes()->Get(0);  // one node: validated
    switch (spec.rule) {
      case DimRule::kTokens: ok = n->op() == plan::ExprOp::sym && n->operand() == tokens_symbol; break;
      case DimRule::kConst: ok = n->op() == plan::ExprOp::const_ && n->operand() == spec.value; break;
      case DimRule::kAnyConst: ok = n->op() == plan::ExprOp::const_ && n->operand() > 0; break;
      case DimRule::kTokensOrAnyConst:
        ok = (n->op() == plan::ExprOp::sym && n->operand() == tokens_symbol) ||
             (n->op() == plan::ExprOp::const_ && n->operand() > 0);
        break;
    }
  }
  if (!ok) {
    std::string want = "[";
    size_t k = 0;
    for (const DimSpec& spec : shape) {
      want += k++ ? ", " : "";
      switch (spec.rule) {
        case DimRule::kTokens: want += "tokens"; break;
        case DimRule::kConst: want += std::to_string(spec.value); break;
        case DimRule::kAnyConst: want += "N"; break;
        case DimRule::kTokensOrAnyConst: want += "tokens or N"; break;
      }
    }
    std::string have = "[";
    for (flatbuffers::uoffset_t j = 0; j < b->shape()->size(); ++j)
      have += (j ? ", " : "") + load::chain_to_string(*b->shape()->Get(j), plan.plan());
    return contract_error(plan, std::string("buffer '") + name + "' has shape " + have + "], kern-run needs " + want + "]");
  }
  return static_cast<uint32_t>(i);
}

}  // namespace

Result<CausalLmContract> resolve_causal_lm_contract(const load::PlanFile& plan) {
  CausalLmContract c;
  const plan::Plan& p = plan.plan();
  int prefill = plan.find_program("prefill");
  int decode = plan.find_program("decode");
  if (prefill < 0) return contract_error(plan, "the plan has no program 'prefill'");
  if (decode < 0) return contract_error(plan, "the plan has no program 'decode'");
  c.prefill = static_cast<uint32_t>(prefill);
  c.decode = static_cast<uint32_t>(decode);
  if (int last = plan.find_program("prefill_last"); last >= 0) c.prefill_last = static_cast<uint32_t>(last);
  int tokens = plan.find_symbol("tokens");
  if (tokens < 0) return contract_error(plan, "the plan has no symbol 'tokens'");
  for (const auto* s : *p.symbols())
    if (s->name()->string_view() != "tokens" && s->name()->string_view() != "batch")
      return contract_error(plan, "the plan has symbol '" + s->name()->str() +
                                      "', kern-run only supplies 'tokens' and 'batch'");
  c.tokens_symbol = static_cast<uint32_t>(tokens);
  if (int batch = plan.find_symbol("batch"); batch >= 0) {
    c.batch_symbol = static_cast<uint32_t>(batch);
    if (p.symbols()->Get(c.batch_symbol)->min() != 1)
      return contract_error(plan, "symbol 'batch' has min " + std::to_string(p.symbols()->Get(c.batch_symbol)->min()) +
                                      ", the batch-1 programs need batch = 1");
  }
  c.tokens_min = p.symbols()->Get(c.tokens_symbol)->min();
  c.tokens_max = p.symbols()->Get(c.tokens_symbol)->max();
  if (c.tokens_min > 1)
    return contract_error(plan, "symbol 'tokens' has min " + std::to_string(c.tokens_min) + ", decode needs tokens = 1");

  const DimSpec t{DimRule::kTokens};
  const DimSpec any{DimRule::kAnyConst};
  // logits: [tokens, V], or [R, V] with the rows the programs need (decode
  // computes one row, docs/causal-lm-manifest.md); kern-run never reads it.
  const DimSpec logit_rows{DimRule::kTokensOrAnyConst};
  using plan::DType;
  struct Want {
    uint32_t* out;
    const char* name;
    DType dtype;
    std::initializer_list<DimSpec> shape;
  };
  const Want wants[] = {
      {&c.token_ids, "token_ids", DType::i64, {t}},
      {&c.positions, "positions", DType::i64, {t}},
      {&c.slot_mapping, "slot_mapping", DType::i64, {t}},
      {&c.seq_lens, "seq_lens", DType::i32, {{DimRule::kConst, 1}}},
      {&c.cu_seqlens_q, "cu_seqlens_q", DType::i32, {{DimRule::kConst, 2}}},
      {&c.block_table, "block_table", DType::i32, {any}},
      {&c.next_token, "next_token", DType::i64, {t}},
  };
  for (const Want& w : wants) {
    KERN_ASSIGN_OR_RETURN(auto i, find_buffer(plan, w.name, w.dtype, w.shape, c.tokens_symbol));
    *w.out = i;
  }
  // The step inputs decode maintains on the device are carries (the decode
  // program writes the next step's values); the rest are caller inputs.
  for (uint32_t idx : {c.token_ids, c.positions, c.slot_mapping, c.seq_lens})
    if (p.buffers()->Get(idx)->class_() != plan::BufferClass::carry)
      return contract_error(plan, "buffer '" + p.buffers()->Get(idx)->name()->str() +
                                      "' is not of class carry (decode feeds its token and counters back on the "
                                      "device; regenerate the manifest with examples/gen_qwen3_manifest.py)");
  for (uint32_t idx : {c.cu_seqlens_q, c.block_table})
    if (p.buffers()->Get(idx)->class_() != plan::BufferClass::input)
      return contract_error(plan, "buffer '" + p.buffers()->Get(idx)->name()->str() + "' is not of class input");
  c.block_table_pages = p.buffers()->Get(c.block_table)->shape()->Get(0)->nodes()->Get(0)->operand();
  // Pages x 16 tokens must not wrap (a plan with 2^60 pages said "= 0
  // tokens"); seq_lens is i32, so no table beyond INT32_MAX tokens is usable.
  if (c.block_table_pages > static_cast<uint64_t>(INT32_MAX) / kKvBlockTokens)
    return contract_error(plan, "buffer 'block_table' has " + std::to_string(c.block_table_pages) +
                                    " pages; at " + std::to_string(kKvBlockTokens) +
                                    " tokens per page that exceeds the i32 range of seq_lens (at most " +
                                    std::to_string(static_cast<uint64_t>(INT32_MAX) / kKvBlockTokens) + " pages)");
  // Token ids index the embedding's rows: a vocabulary the logits and the
  // embedding disagree on would let a valid-looking id read past the table.
  KERN_ASSIGN_OR_RETURN(auto embed,
                        find_buffer(plan, "model.embed_tokens.weight", DType::bf16, {any, any}, c.tokens_symbol));
  uint64_t rows = p.buffers()->Get(embed)->shape()->Get(0)->nodes()->Get(0)->operand();
  // `logits` is optional: kern-run never reads it, and a plan lifted from a
  // capture (kern-lift, docs/mining.md) keeps it inside a larger buffer.
  // Without it the vocabulary is the embedding's rows.
  if (plan.find_buffer("logits") < 0) {
    c.logits = CausalLmContract::kNoBuffer;
    c.vocab = rows;
  } else {
    KERN_ASSIGN_OR_RETURN(c.logits, find_buffer(plan, "logits", DType::bf16, {logit_rows, any}, c.tokens_symbol));
    c.vocab = p.buffers()->Get(c.logits)->shape()->Get(1)->nodes()->Get(0)->operand();
  }
  if (rows != c.vocab)
    return contract_error(plan, "buffer 'model.embed_tokens.weight' has " + std::to_string(rows) +
                                    " rows, the logits buffer " + std::to_string(c.vocab) + " columns");
  // Sampling inputs: all five or none (a manifest from before device sampling).
  struct SamplingWant {
    uint32_t* out;
    const char* name;
    DType dtype;
  };
  const SamplingWant sampling[] = {{&c.sample_temperature, "sample_temperature", DType::f32},
                                   {&c.sample_top_k, "sample_top_k", DType::i32},
                                   {&c.sample_top_p, "sample_top_p", DType::f32},
                                   {&c.sample_min_p, "sample_min_p", DType::f32},
                                   {&c.sample_seed, "sample_seed", DType::i64}};
  int present = 0;
  for (const SamplingWant& w : sampling) present += plan.find_buffer(w.name) >= 0;
  if (present != 0) {
    for (const SamplingWant& w : sampling) {
      KERN_ASSIGN_OR_RETURN(auto i, find_buffer(plan, w.name, w.dtype, {any}, c.tokens_symbol));
      if (p.buffers()->Get(i)->class_() != plan::BufferClass::input)
        return contract_error(plan, std::string("buffer '") + w.name + "' is not of class input");
      const uint64_t rows = p.buffers()->Get(i)->shape()->Get(0)->nodes()->Get(0)->operand();
      if (c.sampling_rows != 0 && rows != c.sampling_rows)
        return contract_error(plan, std::string("buffer '") + w.name + "' has " + std::to_string(rows) +
                                        " rows, sample_temperature " + std::to_string(c.sampling_rows));
      c.sampling_rows = rows;
      *w.out = i;
    }
  }
  // The RoPE table bounds the positions a sequence may reach (its rows are
  // max_position_embeddings); a plan without one (another position scheme)
  // has no such bound.
  if (plan.find_buffer("rope.cos_sin_cache") >= 0) {
    KERN_ASSIGN_OR_RETURN(auto rope,
                          find_buffer(plan, "rope.cos_sin_cache", DType::f32, {any, any}, c.tokens_symbol));
    c.rope_positions = p.buffers()->Get(rope)->shape()->Get(0)->nodes()->Get(0)->operand();
  }
  return c;
}

}  // namespace kern::engine
