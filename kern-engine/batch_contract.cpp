// Resolving and checking the batched-decode caller contract (batch_contract.h).
#include "kern-engine/batch_contract.h"

#include <string>

namespace kern::engine {

namespace {

Error batch_error(const load::PlanFile& plan, const std::string& what) {
  return make_error(ErrorKind::kManifest,
                    plan.path() + ": " + what + " (the batched decode contract, docs/batching.md)");
}

/// Dim `d` of `b` is the symbol `sym` (one node).
bool is_sym(const plan::Buffer& b, uint32_t d, uint32_t sym) {
  const auto* chain = b.shape()->Get(d);
  return chain->nodes()->size() == 1 && chain->nodes()->Get(0)->op() == plan::ExprOp::sym &&
         chain->nodes()->Get(0)->operand() == sym;
}

/// Dim `d` of `b` is the constant `value` (one node).
bool is_const(const plan::Buffer& b, uint32_t d, uint64_t value) {
  const auto* chain = b.shape()->Get(d);
  return chain->nodes()->size() == 1 && chain->nodes()->Get(0)->op() == plan::ExprOp::const_ &&
         chain->nodes()->Get(0)->operand() == value;
}

}  // namespace

Result<std::optional<BatchContract>> resolve_batch_contract(const load::PlanFile& plan, const CausalLmContract& c) {
  const int program = plan.find_program("decode_batch");
  if (program < 0) return std::optional<BatchContract>{};
  if (c.batch_symbol == CausalLmContract::kNoSymbol)
    return batch_error(plan, "the plan has program 'decode_batch' but no symbol 'batch'");
  const plan::Plan& p = plan.plan();
  BatchContract b;
  b.decode_batch = static_cast<uint32_t>(program);
  b.batch_symbol = c.batch_symbol;
  b.max_batch = p.symbols()->Get(b.batch_symbol)->max();
  b.pages_per_seq = c.block_table_pages;
  struct Want {
    uint32_t* out;
    const char* name;
    plan::DType dtype;
    plan::BufferClass cls;
    bool table;  // [batch, pages_per_seq], else [batch]
  };
  using plan::BufferClass;
  using plan::DType;
  for (const Want& w : {Want{&b.token_ids, "batch_token_ids", DType::i64, BufferClass::carry, false},
                        Want{&b.positions, "batch_positions", DType::i64, BufferClass::carry, false},
                        Want{&b.slot_mapping, "batch_slot_mapping", DType::i64, BufferClass::carry, false},
                        Want{&b.seq_lens, "batch_seq_lens", DType::i32, BufferClass::carry, false},
                        Want{&b.block_tables, "batch_block_tables", DType::i32, BufferClass::input, true}}) {
    const int i = plan.find_buffer(w.name);
    if (i < 0) return batch_error(plan, std::string("the plan has no buffer '") + w.name + "'");
    const plan::Buffer& buf = *p.buffers()->Get(static_cast<uint32_t>(i));
    const std::string want = std::string(w.dtype == DType::i64 ? "i64" : "i32") +
                             (w.table ? " [batch, " + std::to_string(b.pages_per_seq) + "]" : " [batch]");
    bool ok = buf.dtype() == w.dtype && buf.shape()->size() == (w.table ? 2u : 1u) && is_sym(buf, 0, b.batch_symbol);
    if (ok && w.table) ok = is_const(buf, 1, b.pages_per_seq);
    if (!ok) return batch_error(plan, std::string("buffer '") + w.name + "' must be " + want);
    if (buf.class_() != w.cls)
      return batch_error(plan, std::string("buffer '") + w.name + "' must be of class " +
                                   (w.cls == BufferClass::carry ? "carry" : "input"));
    *w.out = static_cast<uint32_t>(i);
  }
  // It samples when a launch of decode_batch passes sample_temperature (the
  // sampling dispatch); then every batch row needs its row of the inputs.
  if (c.sampling_rows > 0) {
    for (const plan::Launch* l : *p.programs()->Get(b.decode_batch)->launches())
      for (const plan::LaunchArg* a : *l->args())
        if (a->kind() == plan::ArgKind::buffer && a->index() == c.sample_temperature) b.samples = true;
    if (b.samples && c.sampling_rows < b.max_batch)
      return batch_error(plan, "decode_batch samples up to " + std::to_string(b.max_batch) +
                                   " rows (the 'batch' symbol's max), but the sampling inputs have " +
                                   std::to_string(c.sampling_rows) + " rows (sample_temperature)");
  }
  return std::optional<BatchContract>{b};
}

}  // namespace kern::engine
