// The causal-LM caller contract: a plan lacking a program, buffer or symbol of
// docs/causal-lm-manifest.md, or with a buffer of the wrong dtype/shape/class,
// is rejected with a message naming it. Plans are hand-built (plan_builder.h).
#include <catch2/catch.hpp>

#include <functional>

#include "kern-engine/batch_contract.h"
#include "kern-engine/causal_lm_contract.h"
#include "test/load/plan_builder.h"

using namespace kern;
using namespace kern::test;

namespace {

/// The contract's buffers, symbol and two (empty) programs: a valid plan.
PlanDesc contract_plan() {
  using plan::BufferClass;
  using plan::DType;
  PlanDesc d;
  d.symbols = {{"tokens", 1, 512}};
  const ExprDesc t = ExprDesc::s(0);
  d.buffers = {
      {"token_ids", DType::i64, BufferClass::carry, {t}, 4096},
      {"positions", DType::i64, BufferClass::carry, {t}, 4096},
      {"slot_mapping", DType::i64, BufferClass::carry, {t}, 4096},
      {"seq_lens", DType::i32, BufferClass::carry, {ExprDesc::c(1)}, 4},
      {"cu_seqlens_q", DType::i32, BufferClass::input, {ExprDesc::c(2)}, 8},
      {"block_table", DType::i32, BufferClass::input, {ExprDesc::c(4)}, 16},
      {"next_token", DType::i64, BufferClass::output, {t}, 4096},
      {"logits", DType::bf16, BufferClass::workspace, {t, ExprDesc::c(32)}, 512 * 32 * 2},
      {"model.embed_tokens.weight", DType::bf16, BufferClass::weight, {ExprDesc::c(32), ExprDesc::c(8)}, 32 * 8 * 2},
  };
  d.programs = {{"prefill", 0, {}, std::nullopt}, {"decode", 0, {}, std::nullopt}};
  return d;
}

Result<engine::CausalLmContract> resolve(const PlanDesc& d) {
  auto plan = load::PlanFile::from_bytes(serialize(d), "q.kplan");
  if (!plan.ok()) FAIL(plan.error().message);
  return engine::resolve_causal_lm_contract(plan.value());
}

}  // namespace

TEST_CASE("the causal-LM contract resolves buffer indices, vocab and block table length", "[run][contract]") {
  auto c = resolve(contract_plan());
  REQUIRE(c.ok());
  CHECK(c->prefill == 0);
  CHECK(c->decode == 1);
  CHECK(c->seq_lens == 3);
  CHECK(c->logits == 7);
  CHECK(c->vocab == 32);
  CHECK(c->block_table_pages == 4);
  CHECK(c->tokens_max == 512);
}

TEST_CASE("the causal-LM contract's logits buffer is optional: the vocabulary is then the embedding's rows",
          "[run][contract]") {
  PlanDesc d = contract_plan();
  d.buffers.erase(d.buffers.begin() + 7);  // logits (kern-run never reads it; a lifted plan has none)
  auto c = resolve(d);
  REQUIRE(c.ok());
  CHECK(c->logits == engine::CausalLmContract::kNoBuffer);
  CHECK(c->vocab == 32);
  CHECK(c->next_token == 6);
}

TEST_CASE("a plan breaking the causal-LM contract is rejected naming what is wrong", "[run][contract]") {
  struct Case {
    const char* what;
    std::function<void(PlanDesc&)> mutate;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"no decode", [](PlanDesc& d) { d.programs.pop_back(); }, "the plan has no program 'decode'"},
      {"no prefill", [](PlanDesc& d) { d.programs[0].name = "warmup"; }, "the plan has no program 'prefill'"},
      {"no tokens", [](PlanDesc& d) { d.symbols[0].name = "n"; }, "the plan has no symbol 'tokens'"},
      {"extra symbol", [](PlanDesc& d) { d.symbols.push_back({"pos", 1, 4}); },
       "the plan has symbol 'pos', kern-run only supplies 'tokens' and 'batch'"},
      {"batch min", [](PlanDesc& d) { d.symbols.push_back({"batch", 2, 4}); },
       "symbol 'batch' has min 2, the batch-1 programs need batch = 1"},
      {"tokens min", [](PlanDesc& d) { d.symbols[0].min = 2; },
       "symbol 'tokens' has min 2, decode needs tokens = 1"},
      {"missing buffer", [](PlanDesc& d) { d.buffers[6].name = "next_id"; }, "the plan has no buffer 'next_token'"},
      {"dtype", [](PlanDesc& d) { d.buffers[3].dtype = plan::DType::i64; d.buffers[3].max_size_bytes = 8; },
       "buffer 'seq_lens' has dtype i64, kern-run needs i32"},
      {"shape", [](PlanDesc& d) { d.buffers[7].shape.pop_back(); d.buffers[7].max_size_bytes = 1024; },
       "buffer 'logits' has shape [tokens], kern-run needs [tokens or N, N]"},
      {"cu_seqlens length", [](PlanDesc& d) { d.buffers[4].shape[0] = ExprDesc::c(3); d.buffers[4].max_size_bytes = 12; },
       "buffer 'cu_seqlens_q' has shape [3], kern-run needs [2]"},
      {"class", [](PlanDesc& d) { d.buffers[5].cls = plan::BufferClass::workspace; },
       "buffer 'block_table' is not of class input"},
      // An old manifest whose decode does not feed its token back (inputs, not carries).
      {"step input not a carry", [](PlanDesc& d) { d.buffers[2].cls = plan::BufferClass::input; },
       "buffer 'slot_mapping' is not of class carry (decode feeds its token and counters back on the device; "
       "regenerate the manifest with examples/gen_qwen3_manifest.py)"},
      // Token ids index the embedding: its rows must be the logits' vocabulary.
      {"embedding rows", [](PlanDesc& d) { d.buffers[8].shape[0] = ExprDesc::c(40); d.buffers[8].max_size_bytes = 40 * 8 * 2; },
       "buffer 'model.embed_tokens.weight' has 40 rows, the logits buffer 32 columns"},
      // 16 x 2^60 pages used to wrap to "= 0 tokens".
      {"block table pages", [](PlanDesc& d) { d.buffers[5].shape[0] = ExprDesc::c(uint64_t{1} << 60);
                                              d.buffers[5].max_size_bytes = uint64_t{1} << 62; },
       "buffer 'block_table' has 1152921504606846976 pages; at 16 tokens per page that exceeds the i32 range of "
       "seq_lens (at most 134217727 pages)"},
      {"no embedding", [](PlanDesc& d) { d.buffers[8].name = "embed"; },
       "the plan has no buffer 'model.embed_tokens.weight'"},
  };
  for (const Case& c : cases) {
    PlanDesc d = contract_plan();
    c.mutate(d);
    INFO(c.what);
    auto r = resolve(d);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kManifest);
    CHECK(r.error().message ==
          std::string("q.kplan: ") + c.expect + " (the causal-LM caller contract, docs/causal-lm-manifest.md)");
  }
}

namespace {

/// contract_plan() plus the batched decode's symbol, buffers and program (docs/batching.md).
PlanDesc batch_plan() {
  using plan::BufferClass;
  using plan::DType;
  PlanDesc d = contract_plan();
  d.symbols.push_back({"batch", 1, 8});
  const ExprDesc b = ExprDesc::s(1);
  for (const char* n : {"batch_token_ids", "batch_positions", "batch_slot_mapping"})
    d.buffers.push_back({n, DType::i64, BufferClass::carry, {b}, 64});
  d.buffers.push_back({"batch_seq_lens", DType::i32, BufferClass::carry, {b}, 32});
  d.buffers.push_back({"batch_block_tables", DType::i32, BufferClass::input, {b, ExprDesc::c(4)}, 128});
  d.programs.push_back({"decode_batch", 0, {}, std::nullopt});
  return d;
}

/// batch_plan() plus the five sampling inputs of `rows` rows; `reads`: a
/// launch of decode_batch passes sample_temperature (its sampling dispatch).
PlanDesc sampling_batch_plan(uint64_t rows, bool reads) {
  using plan::BufferClass;
  using plan::DType;
  PlanDesc d = batch_plan();
  const auto temperature = static_cast<uint32_t>(d.buffers.size());
  const ExprDesc n = ExprDesc::c(rows);
  d.buffers.push_back({"sample_temperature", DType::f32, BufferClass::input, {n}, rows * 4});
  d.buffers.push_back({"sample_top_k", DType::i32, BufferClass::input, {n}, rows * 4});
  d.buffers.push_back({"sample_top_p", DType::f32, BufferClass::input, {n}, rows * 4});
  d.buffers.push_back({"sample_min_p", DType::f32, BufferClass::input, {n}, rows * 4});
  d.buffers.push_back({"sample_seed", DType::i64, BufferClass::input, {n}, rows * 8});
  if (reads) {  // one kernel of one step taking one f32 buffer
    const plan::Param param = buf(plan::Access::in_, DType::f32);
    d.kernels.push_back({"sample", {param}, {0}});
    StepDesc step;
    step.symbol = "kern_sample_bf16";
    step.params = {param};
    d.steps.push_back(step);
    ArgDesc arg;
    arg.kind = plan::ArgKind::buffer;
    arg.index = temperature;
    d.programs.back().dispatch_count = 1;
    d.programs.back().launches.push_back({0, 0, {arg}});
  }
  return d;
}

Result<std::optional<engine::BatchContract>> resolve_batch(const PlanDesc& d) {
  auto plan = load::PlanFile::from_bytes(serialize(d), "q.kplan");
  if (!plan.ok()) FAIL(plan.error().message);
  auto c = engine::resolve_causal_lm_contract(plan.value());
  REQUIRE(c.ok());
  return engine::resolve_batch_contract(plan.value(), c.value());
}

}  // namespace

TEST_CASE("the batch contract resolves decode_batch, max_batch and the batch buffers, and is absent without them",
          "[run][contract][batch]") {
  auto none = resolve_batch(contract_plan());
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  auto b = resolve_batch(batch_plan());
  REQUIRE(b.ok());
  REQUIRE(b->has_value());
  CHECK((*b)->decode_batch == 2);
  CHECK((*b)->batch_symbol == 1);
  CHECK((*b)->max_batch == 8);
  CHECK((*b)->pages_per_seq == 4);
  CHECK((*b)->block_tables == 13);
  CHECK_FALSE((*b)->samples);  // no sampling inputs
}

TEST_CASE("the batch contract samples when decode_batch reads the sampling inputs of max_batch rows",
          "[run][contract][batch][sampling]") {
  auto reads = resolve_batch(sampling_batch_plan(8, true));
  REQUIRE(reads.ok());
  REQUIRE(reads->has_value());
  CHECK((*reads)->samples);
  // Sampling inputs that decode_batch does not read (a plan from before its sampling dispatch): greedy only.
  auto greedy = resolve_batch(sampling_batch_plan(8, false));
  REQUIRE(greedy.ok());
  REQUIRE(greedy->has_value());
  CHECK_FALSE((*greedy)->samples);
  auto few = resolve_batch(sampling_batch_plan(4, true));
  REQUIRE_FALSE(few.ok());
  CHECK(few.error().kind == ErrorKind::kManifest);
  CHECK(few.error().message == "q.kplan: decode_batch samples up to 8 rows (the 'batch' symbol's max), but the "
                               "sampling inputs have 4 rows (sample_temperature) (the batched decode contract, "
                               "docs/batching.md)");
}

TEST_CASE("a plan breaking the batch contract is rejected naming what is wrong", "[run][contract][batch]") {
  struct Case {
    const char* what;
    std::function<void(PlanDesc&)> mutate;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"no batch symbol", [](PlanDesc& d) { d.symbols.pop_back(); for (auto& b : d.buffers) for (auto& e : b.shape)
                                              if (e.nodes.size() == 1 && e.nodes[0].op() == plan::ExprOp::sym &&
                                                  e.nodes[0].operand() == 1) e = ExprDesc::c(8); },
       "the plan has program 'decode_batch' but no symbol 'batch'"},
      {"missing buffer", [](PlanDesc& d) { d.buffers[11].name = "batch_slots"; },
       "the plan has no buffer 'batch_slot_mapping'"},
      {"table width", [](PlanDesc& d) { d.buffers[13].shape[1] = ExprDesc::c(5); d.buffers[13].max_size_bytes = 160; },
       "buffer 'batch_block_tables' must be i32 [batch, 4]"},
      {"lens dtype", [](PlanDesc& d) { d.buffers[12].dtype = plan::DType::i64; d.buffers[12].max_size_bytes = 64; },
       "buffer 'batch_seq_lens' must be i32 [batch]"},
      {"class", [](PlanDesc& d) { d.buffers[9].cls = plan::BufferClass::input; },
       "buffer 'batch_token_ids' must be of class carry"},
  };
  for (const Case& c : cases) {
    PlanDesc d = batch_plan();
    c.mutate(d);
    INFO(c.what);
    auto r = resolve_batch(d);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kManifest);
    CHECK(r.error().message ==
          std::string("q.kplan: ") + c.expect + " (the batched decode contract, docs/batching.md)");
  }
}
