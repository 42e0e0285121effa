// Lowering of the base manifest (base_manifest.json) into a .kplan, read back
// through the generated FlatBuffers accessors, and the plan dump.
#include <bit>
#include <catch2/catch.hpp>
#include <cstring>

#include "common/plan_checksum.h"
#include "common/plan_format.h"
#include "common/sha256.h"
#include "fixture.h"
#include "kern-verify/lower.h"
#include "kern-verify/plan_dump.h"

using namespace kern;
using namespace kern::verify::testing;

namespace {

std::string lower_json(const std::string& json) {
  Run r = run(json);
  REQUIRE(r.verified.has_value());
  auto bytes = kern::verify::lower(*r.verified, json);
  REQUIRE(bytes.ok());
  return bytes.value();
}

const plan::Plan& as_plan(const std::string& bytes) {
  flatbuffers::Verifier v(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  REQUIRE(plan::VerifyPlanBuffer(v));
  return *plan::GetPlan(bytes.data());
}

const plan::Program& program(const plan::Plan& p, const std::string& name) {
  for (const auto* prog : *p.programs()) {
    if (prog->name()->str() == name) return *prog;
  }
  FAIL("no program " << name);
  throw;
}

std::vector<std::pair<plan::ExprOp, uint64_t>> nodes(const plan::Expr* e) {
  std::vector<std::pair<plan::ExprOp, uint64_t>> out;
  for (const auto* n : *e->nodes()) out.emplace_back(n->op(), n->operand());
  return out;
}

std::span<const uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("lower writes a plan with the KPLN identifier, format version and manifest sha256", "[lower]") {
  const std::string bytes = lower_json(base_manifest());
  REQUIRE(plan::PlanBufferHasIdentifier(bytes.data()));
  const plan::Plan& p = as_plan(bytes);
  CHECK(p.format_version() == kPlanFormatVersion);
  auto digest = sha256_bytes(base_manifest());
  REQUIRE(digest.ok());
  REQUIRE(p.manifest_sha256()->size() == 32);
  CHECK(std::memcmp(p.manifest_sha256()->data(), digest.value().data(), 32) == 0);
  CHECK(p.model()->str() == "verify-test");
}

TEST_CASE("lower sizes buffers and scratch at the symbols' maxima", "[lower]") {
  const std::string bytes = lower_json(base_manifest());
  const plan::Plan& p = as_plan(bytes);
  REQUIRE(p.buffers()->size() == 6);
  const auto* hidden = p.buffers()->Get(3);
  CHECK(hidden->name()->str() == "hidden");
  CHECK(hidden->class_() == plan::BufferClass::workspace);
  CHECK(hidden->max_size_bytes() == 64 * 16 * 2);
  CHECK(nodes(hidden->shape()->Get(0)) == std::vector<std::pair<plan::ExprOp, uint64_t>>{{plan::ExprOp::sym, 0}});
  CHECK(nodes(hidden->shape()->Get(1)) == std::vector<std::pair<plan::ExprOp, uint64_t>>{{plan::ExprOp::const_, 16}});
  CHECK(p.buffers()->Get(5)->max_size_bytes() == 64 * 8);  // next: i64 [tokens]
  REQUIRE(p.scratch()->size() == 2);
  CHECK(p.scratch()->Get(0)->name()->str() == "partial_val");
  CHECK(p.scratch()->Get(0)->kernel() == 3);
  CHECK(p.scratch()->Get(0)->max_size_bytes() == 64 * 8 * 4);
}

TEST_CASE("lower flattens each dispatch into one launch per impl step", "[lower]") {
  const std::string bytes = lower_json(base_manifest());
  const plan::Plan& p = as_plan(bytes);
  const plan::Program& prefill = program(p, "prefill");
  CHECK(prefill.dispatch_count() == 2);
  CHECK(prefill.launches()->size() == 2);
  const plan::Program& decode = program(p, "decode");
  CHECK(decode.dispatch_count() == 4);
  REQUIRE(decode.launches()->size() == 5);  // argmax is two steps
  std::vector<uint32_t> dispatch, step;
  for (const auto* l : *decode.launches()) {
    dispatch.push_back(l->dispatch());
    step.push_back(l->step());
  }
  CHECK(dispatch == std::vector<uint32_t>{0, 1, 2, 3, 3});
  CHECK(step == std::vector<uint32_t>{0, 1, 2, 3, 4});
  std::vector<std::string> labels;
  for (const auto* s : *decode.dispatch_labels()) labels.push_back(s->str());
  CHECK(labels == std::vector<std::string>{"embed", "kv", "lm_head", "sample"});
  CHECK(program(p, "prefill").dispatch_labels()->Get(1)->str() == "kv_write");  // no label: the kernel name
}

TEST_CASE("lower wires forwarded args, literals, expressions and scratch", "[lower]") {
  const std::string bytes = lower_json(base_manifest());
  const plan::Plan& p = as_plan(bytes);
  const plan::Program& decode = program(p, "decode");
  const auto* kv = decode.launches()->Get(1)->args();
  REQUIRE(kv->size() == 6);
  CHECK(kv->Get(0)->kind() == plan::ArgKind::buffer);
  CHECK(kv->Get(0)->index() == 3);  // hidden
  CHECK(kv->Get(1)->kind() == plan::ArgKind::state);
  CHECK(kv->Get(1)->index() == 0);
  CHECK(kv->Get(1)->offset() == 512);
  CHECK(kv->Get(2)->kind() == plan::ArgKind::expr);
  CHECK(nodes(kv->Get(2)->expr()) ==
        std::vector<std::pair<plan::ExprOp, uint64_t>>{{plan::ExprOp::sym, 0}, {plan::ExprOp::mul, 2}});
  CHECK(kv->Get(3)->kind() == plan::ArgKind::literal);
  CHECK(kv->Get(3)->literal() == std::bit_cast<uint32_t>(0.5f));
  CHECK(kv->Get(4)->literal() == 0xFFFFFFFFFFFFFFFEull);  // i64 -2
  CHECK(kv->Get(5)->literal() == 1);                      // u8 1
  const auto* embed = decode.launches()->Get(0)->args();
  CHECK(embed->Get(3)->kind() == plan::ArgKind::expr);  // {"sym": "tokens"}
  CHECK(nodes(embed->Get(3)->expr()) == std::vector<std::pair<plan::ExprOp, uint64_t>>{{plan::ExprOp::sym, 0}});
  CHECK(embed->Get(4)->literal() == 16);
  const auto* partial = decode.launches()->Get(3)->args();
  CHECK(partial->Get(1)->kind() == plan::ArgKind::scratch);
  CHECK(partial->Get(1)->index() == 0);
  CHECK(partial->Get(2)->index() == 1);
  CHECK(partial->Get(5)->literal() == 8);
  const auto* reduce = decode.launches()->Get(4)->args();
  CHECK(reduce->Get(1)->kind() == plan::ArgKind::scratch);
  CHECK(reduce->Get(1)->index() == 1);
  CHECK(reduce->Get(1)->offset() == 4);
  CHECK(reduce->Get(2)->kind() == plan::ArgKind::buffer);
  CHECK(reduce->Get(2)->index() == 5);  // next
}

TEST_CASE("lower stores a negative i32 literal as its 32-bit pattern", "[lower]") {
  const std::string bytes = lower_json(set(base_manifest(), "/programs/decode/dispatches/2/args/5", R"({"i32": -1})"));
  CHECK(program(as_plan(bytes), "decode").launches()->Get(2)->args()->Get(5)->literal() == 0xFFFFFFFFull);
}

TEST_CASE("lower compiles grids into expression chains and deduplicates cubins", "[lower]") {
  const std::string bytes = lower_json(base_manifest());
  const plan::Plan& p = as_plan(bytes);
  REQUIRE(p.steps()->size() == 5);
  const auto* kv = p.steps()->Get(1);
  CHECK(kv->symbol()->str() == "kern_kv_write");
  CHECK(nodes(kv->grid_x()) ==
        std::vector<std::pair<plan::ExprOp, uint64_t>>{{plan::ExprOp::sym, 0}, {plan::ExprOp::ceil_div, 4}});
  CHECK(nodes(kv->grid_y()) == std::vector<std::pair<plan::ExprOp, uint64_t>>{{plan::ExprOp::const_, 1}});
  CHECK(kv->block_x() == 64);
  CHECK(kv->shared_mem() == nullptr);
  CHECK(nodes(p.steps()->Get(3)->shared_mem()) ==
        std::vector<std::pair<plan::ExprOp, uint64_t>>{{plan::ExprOp::const_, 1024}});
  REQUIRE(p.cubins()->size() == 3);  // argmax.cubin pinned by two steps
  CHECK(p.cubins()->Get(2)->path()->str() == "argmax.cubin");
  CHECK(p.steps()->Get(3)->cubin() == 2);
  CHECK(p.steps()->Get(4)->cubin() == 2);
  CHECK(p.steps()->Get(2)->cubin() == -1);  // extern
  REQUIRE(p.cubins()->Get(0)->sha256()->size() == 32);
  CHECK(p.cubins()->Get(0)->sha256()->Get(0) == 0xaa);
  const auto* k = p.kernels()->Get(3);
  CHECK(k->name()->str() == "argmax");
  CHECK(std::vector<uint32_t>(k->steps()->begin(), k->steps()->end()) == std::vector<uint32_t>{3, 4});
}

TEST_CASE("lower compiles nested expressions innermost first", "[lower]") {
  const std::string json = set(base_manifest(), "/kernels/embed/impl/steps/0/grid/0",
                               R"({"ceil_div": [{"mul": [{"sym": "tokens"}, 3]}, 2]})");
  const std::string bytes = lower_json(json);
  CHECK(nodes(as_plan(bytes).steps()->Get(0)->grid_x()) ==
        std::vector<std::pair<plan::ExprOp, uint64_t>>{
            {plan::ExprOp::sym, 0}, {plan::ExprOp::mul, 3}, {plan::ExprOp::ceil_div, 2}});
}

TEST_CASE("lower is deterministic: the same manifest gives the same bytes", "[lower]") {
  CHECK(lower_json(base_manifest()) == lower_json(base_manifest()));
}

TEST_CASE("dump lists symbols, buffers, kernels, launches and a summary", "[lower][dump]") {
  const std::string bytes = lower_json(base_manifest());
  auto text = kern::verify::dump_plan(span_of(bytes));
  REQUIRE(text.ok());
  const std::string& t = text.value();
  CHECK(t.find("[0] tokens 1..64") != std::string::npos);
  CHECK(t.find("buffers (6): input 1, output 1, weight 2, workspace 2, carry 0") != std::string::npos);
  CHECK(t.find("[3] hidden workspace bf16 [tokens, 16] 2048 B") != std::string::npos);
  CHECK(t.find("grid [ceil_div(tokens, 4), 1, 1]") != std::string::npos);
  CHECK(t.find("program decode: 4 dispatches, 5 launches") != std::string::npos);
  CHECK(t.find("#3 sample: argmax step [4] kern_argmax_reduce") != std::string::npos);
  CHECK(t.find("1: state [0] kv +512") != std::string::npos);
  CHECK(t.find("3: f32 0.5\n      4: i64 -2\n      5: u8 1\n") != std::string::npos);
  CHECK(t.find("summary: 6 buffers; prefill: 2 dispatches, 2 launches, 3 buffers; "
               "decode: 4 dispatches, 5 launches, 6 buffers") != std::string::npos);
}

TEST_CASE("dump rejects bytes that are not a plan", "[lower][dump]") {
  const std::string bytes = lower_json(base_manifest());
  CHECK_FALSE(kern::verify::dump_plan(span_of(std::string("hello"))).ok());
  std::string wrong_id = bytes;
  wrong_id[4] = 'X';
  auto r = kern::verify::dump_plan(span_of(wrong_id));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("identifier") != std::string::npos);
  std::string truncated = bytes.substr(0, bytes.size() / 2);
  CHECK_FALSE(kern::verify::dump_plan(span_of(truncated)).ok());
}

TEST_CASE("dump rejects a plan of another format version", "[lower][dump]") {
  std::vector<uint8_t> sha(32, 0);
  // Required vectors must be present for the Verifier: build them empty.
  flatbuffers::FlatBufferBuilder b2;
  auto sha_v = b2.CreateVector(sha);
  auto empty_sym = b2.CreateVector(std::vector<flatbuffers::Offset<plan::Symbol>>{});
  auto empty_state = b2.CreateVector(std::vector<flatbuffers::Offset<plan::State>>{});
  auto empty_buf = b2.CreateVector(std::vector<flatbuffers::Offset<plan::Buffer>>{});
  auto empty_cubin = b2.CreateVector(std::vector<flatbuffers::Offset<plan::Cubin>>{});
  auto empty_kernel = b2.CreateVector(std::vector<flatbuffers::Offset<plan::Kernel>>{});
  auto empty_step = b2.CreateVector(std::vector<flatbuffers::Offset<plan::Step>>{});
  auto empty_scratch = b2.CreateVector(std::vector<flatbuffers::Offset<plan::Scratch>>{});
  auto empty_prog = b2.CreateVector(std::vector<flatbuffers::Offset<plan::Program>>{});
  auto r2 = plan::CreatePlan(b2, kPlanFormatVersion + 1, sha_v, 0, empty_sym, empty_state, empty_buf, empty_cubin,
                             empty_kernel, empty_step, empty_scratch, empty_prog);
  plan::FinishPlanBuffer(b2, r2);
  std::string bytes(reinterpret_cast<const char*>(b2.GetBufferPointer()), b2.GetSize());
  auto trailer = plan_trailer(span_of(bytes));
  REQUIRE(trailer.ok());
  bytes.append(reinterpret_cast<const char*>(trailer->data()), trailer->size());
  auto r = kern::verify::dump_plan(span_of(bytes));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("format version " + std::to_string(kPlanFormatVersion + 1)) != std::string::npos);
}
