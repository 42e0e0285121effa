// The strict manifest reader on valid input: the model it builds, spans and
// pointers of nodes, and the optional/null fields of the upstream schema.
#include <catch2/catch.hpp>

#include "common/json_tree.h"
#include "test/common/reader_fixture.h"

namespace kern::test {
namespace {

TEST_CASE("reader builds the model of a valid manifest", "[reader]") {
  ReadOutcome r = read_text(kBaseManifest);
  INFO(render_human(r.diags.diagnostics(), r.file, false));
  REQUIRE(r.diags.diagnostics().empty());
  REQUIRE(r.manifest.has_value());
  const Manifest& m = *r.manifest;

  CHECK(m.meta.version == 2);
  CHECK(m.meta.model == "tiny");
  CHECK_FALSE(m.meta.spec.has_value());

  REQUIRE(m.symbols.size() == 2);
  CHECK(m.symbols[0].name == "tokens");
  CHECK(m.symbols[0].min == 1);
  CHECK(m.symbols[0].max == 64);
  CHECK(m.symbols[1].name == "pages");
  CHECK(m.symbols[1].min == 1);  // schema default
  CHECK(m.symbols[1].max == 8);

  REQUIRE(m.states.size() == 2);
  CHECK(m.states[0].bytes_per_token == 1024);
  CHECK(m.states[0].bytes_fixed == 0);
  CHECK(m.states[0].align == 256);
  CHECK(m.states[1].name == "ssm");
  CHECK(m.states[1].bytes_fixed == 4096);
  CHECK(m.states[1].align == 256);  // schema default

  REQUIRE(m.buffers.size() == 4);
  const Buffer* x = m.find_buffer("x");
  REQUIRE(x != nullptr);
  CHECK(x->dtype == DType::kBf16);
  CHECK(x->cls == BufferClass::kInput);
  REQUIRE(x->shape.size() == 2);
  CHECK(x->shape[0].is_symbol());
  CHECK(std::get<std::string>(x->shape[0].value) == "tokens");
  CHECK(std::get<uint64_t>(x->shape[1].value) == 128);
  CHECK(m.find_buffer("w")->cls == BufferClass::kWeight);
  CHECK_FALSE(m.find_buffer("w")->domain.has_value());
  const Buffer* y = m.find_buffer("y");
  REQUIRE(y->domain.has_value());
  REQUIRE(y->domain->min.has_value());
  CHECK(y->domain->min->kind == Bound::Kind::kFloat);
  CHECK(y->domain->min->float_value == -1.5);
  REQUIRE(y->domain->max.has_value());
  CHECK(y->domain->max->kind == Bound::Kind::kExpr);
  CHECK(y->domain->max->expr->to_string() == "tokens");
  const Buffer* ids = m.find_buffer("ids");
  REQUIRE(ids->domain.has_value());
  CHECK(ids->domain->index_into == std::optional<std::string>("kv"));
  CHECK(ids->domain->unit == std::optional<uint64_t>(16));
  CHECK(ids->domain->monotone);
  CHECK(m.find_buffer("nope") == nullptr);

  REQUIRE(m.kernels.size() == 2);
  const Kernel* k = m.find_kernel("rmsnorm");
  REQUIRE(k != nullptr);
  REQUIRE(k->params.size() == 5);
  CHECK(param_type_name(k->params[2]) == "out buffer<bf16>");
  CHECK(k->params[4].kind == ParamKind::kF32);
  REQUIRE(k->scratch.size() == 1);
  CHECK(k->find_scratch("part")->dtype == DType::kF32);
  REQUIRE(k->steps.size() == 1);
  const Step& s = k->steps[0];
  CHECK(s.symbol == "kern_rmsnorm_bf16");
  CHECK_FALSE(s.is_extern());
  CHECK(s.params.size() == 7);
  CHECK(s.block[0] == 256);
  CHECK(s.block[1] == 1);
  REQUIRE(s.grid.size() == 3);
  CHECK(s.grid[0].to_string() == "ceil_div(mul(tokens, 4), 8)");
  CHECK(s.grid[2].to_string() == "1");
  REQUIRE(s.shared_mem.has_value());
  CHECK(s.shared_mem->to_string() == "1024");
  CHECK(s.cubin == std::optional<std::string>("rmsnorm.cubin"));
  CHECK_FALSE(s.sha256.has_value());
  CHECK(s.pdl);
  REQUIRE(s.args.size() == 7);
  CHECK(s.args[4].kind == StepArg::Kind::kArg);
  CHECK(s.args[4].index == 4);
  CHECK(s.args[5].kind == StepArg::Kind::kScratch);
  CHECK(s.args[5].scratch == "part");
  CHECK(s.args[5].offset == 16);
  CHECK(s.args[6].kind == StepArg::Kind::kU8);
  CHECK(s.args[6].int_value == 7);

  const Step& e = m.find_kernel("kv_write")->steps[0];
  CHECK(e.is_extern());
  CHECK_FALSE(e.shared_mem.has_value());
  CHECK_FALSE(e.cubin.has_value());
  CHECK_FALSE(e.pdl);
  REQUIRE(e.args.size() == 6);
  CHECK(e.args[2].kind == StepArg::Kind::kI32);
  CHECK(e.args[2].int_value == -3);
  CHECK(e.args[3].int_value == 4000000000);
  CHECK(e.args[4].int_value == -9000000000);
  CHECK(e.args[5].kind == StepArg::Kind::kF32);
  CHECK(e.args[5].f32_value == 0.5f);

  REQUIRE(m.programs.size() == 1);
  const Program* p = m.find_program("decode");
  REQUIRE(p != nullptr);
  REQUIRE(p->dispatches.size() == 2);
  const Dispatch& d0 = p->dispatches[0];
  CHECK(d0.kernel == "rmsnorm");
  CHECK(d0.label == std::optional<std::string>("final norm"));
  REQUIRE(d0.args.size() == 5);
  CHECK(d0.args[0].kind == Arg::Kind::kBuf);
  CHECK(d0.args[0].name == "x");
  CHECK(d0.args[0].offset == 256);
  CHECK(d0.args[1].offset == 0);
  CHECK(d0.args[3].kind == Arg::Kind::kExpr);
  CHECK(d0.args[3].expr->to_string() == "mul(tokens, 32)");
  CHECK(d0.args[4].kind == Arg::Kind::kF32);
  CHECK(d0.args[4].f32_value == 1e-6f);
  const Dispatch& d1 = p->dispatches[1];
  CHECK_FALSE(d1.label.has_value());
  REQUIRE(d1.args.size() == 6);
  CHECK(d1.args[0].kind == Arg::Kind::kState);
  CHECK(d1.args[0].offset == 64);
  CHECK(d1.args[1].kind == Arg::Kind::kSym);
  CHECK(d1.args[1].name == "tokens");
  CHECK(d1.args[2].int_value == -5);
  CHECK(d1.args[3].kind == Arg::Kind::kU32);
  CHECK(d1.args[4].int_value == -9000000000);
  CHECK(d1.args[5].kind == Arg::Kind::kU8);
  CHECK(d1.args[5].int_value == 255);
}

TEST_CASE("reader records the span and json pointer of each node", "[reader][span]") {
  ReadOutcome r = read_text(kBaseManifest);
  REQUIRE(r.manifest.has_value());
  const Manifest& m = *r.manifest;
  const std::string& text = r.file.text();
  auto text_of = [&](const SourceSpan& s) { return text.substr(s.begin, s.end - s.begin); };
  // Model spans carry offsets; the pointer is resolved from the tree on demand.
  DiagnosticEngine scratch;
  auto tree = parse_json_tree(r.file, scratch);
  REQUIRE(tree != nullptr);
  auto pointer_of = [&](const SourceSpan& s) { return json_pointer_at(*tree, s.begin).value_or("<none>"); };

  const Buffer* x = m.find_buffer("x");
  CHECK(text_of(x->name_span) == "\"x\"");
  CHECK(text_of(x->span) == R"({"dtype": "bf16", "shape": ["tokens", 128], "class": "input"})");
  CHECK(pointer_of(x->span) == "/buffers/x");
  CHECK(pointer_of(x->name_span) == "/buffers/x");  // a key resolves to its value
  CHECK(text_of(x->shape[1].span) == "128");
  CHECK(pointer_of(x->shape[1].span) == "/buffers/x/shape/1");
  LineColumn lc = r.file.line_column(x->name_span.begin);
  CHECK(lc.line == 12);
  CHECK(lc.column == 5);

  const Step& s = m.kernels[0].steps[0];
  CHECK(pointer_of(s.grid[0].span) == "/kernels/rmsnorm/impl/steps/0/grid/0");
  CHECK(text_of(s.grid[0].span) == R"({"ceil_div": [{"mul": [{"sym": "tokens"}, 4]}, 8]})");
  CHECK(text_of(s.symbol_span) == "\"kern_rmsnorm_bf16\"");
  CHECK(pointer_of(s.param_spans[5]) == "/kernels/rmsnorm/impl/steps/0/params/5");
  CHECK(text_of(s.param_spans[5]) == "\"inout buffer<f32>\"");

  const Arg& a = m.programs[0].dispatches[0].args[4];
  CHECK(text_of(a.span) == R"({"f32": 1e-6})");
  CHECK(pointer_of(a.span) == "/programs/decode/dispatches/0/args/4");
  CHECK(text_of(m.meta.version_span) == "2");
}

TEST_CASE("reader escapes '~' and '/' in json pointers of names", "[reader][span]") {
  std::string text = replace_once(kBaseManifest, R"("pages": {"max": 8})", R"("a/b~c": {"max": 8})");
  ReadOutcome r = read_text(text);
  REQUIRE(r.manifest.has_value());
  DiagnosticEngine scratch;
  auto tree = parse_json_tree(r.file, scratch);
  REQUIRE(tree != nullptr);
  CHECK(json_pointer_at(*tree, r.manifest->symbols[1].span.begin) == "/symbols/a~1b~0c");
  CHECK(json_pointer_at(*tree, r.manifest->symbols[1].span.begin + 1) == "/symbols/a~1b~0c/max");  // the key
  CHECK_FALSE(json_pointer_at(*tree, r.manifest->symbols[1].span.begin + 2).has_value());  // inside the key
}

TEST_CASE("reader accepts a speculative meta.spec and a bare expression bound", "[reader]") {
  std::string text = replace_once(kBaseManifest, R"("spec": null)", R"("spec": {"block": 8, "mask_token": -1})");
  text = replace_once(text, R"("min": -1.5)", R"("min": 18446744073709551615)");
  ReadOutcome r = read_text(text);
  INFO(render_human(r.diags.diagnostics(), r.file, false));
  REQUIRE(r.manifest.has_value());
  REQUIRE(r.manifest->meta.spec.has_value());
  CHECK(r.manifest->meta.spec->block == 8);
  CHECK(r.manifest->meta.spec->mask_token == -1);
  const Bound& min = *r.manifest->find_buffer("y")->domain->min;
  CHECK(min.kind == Bound::Kind::kExpr);
  CHECK(min.expr->value == 18446744073709551615ull);
}

TEST_CASE("reader leaves earlier diagnostics in the engine out of its verdict", "[reader]") {
  SourceFile file("m.json", kBaseManifest);
  DiagnosticEngine diags;
  diags.error("E0100", "an earlier error", SourceSpan{});
  CHECK(read_manifest(file, diags).has_value());
  CHECK(diags.diagnostics().size() == 1);
}

TEST_CASE("reader columns count bytes after multi-byte utf-8 text", "[reader][span]") {
  // "é" is 2 bytes, "→" 3 bytes: the value 7 is byte column 52, character 49.
  std::string text = replace_once(kBaseManifest, R"("model": "tiny", "spec": null)", R"("model": "é→", "spec": 7)");
  ReadOutcome r = read_text(text);
  REQUIRE_FALSE(r.manifest.has_value());
  CHECK(summary(r) == std::vector<std::string>{"E0006 2:52 /meta/spec"});
  // The caret is aligned by characters (48 characters precede the value).
  std::string out = render_human(r.diags.diagnostics(), r.file, false);
  CHECK(out.find("\n  | " + std::string(48, ' ') + "^ expected an object\n") != std::string::npos);
}

}  // namespace
}  // namespace kern::test
