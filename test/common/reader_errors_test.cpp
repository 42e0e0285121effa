// The manifest reader's negative cases: the valid base manifest with one
// change each; every case asserts the code, line:column and JSON pointer of
// the diagnostic (style.md §6), not a substring of the message. Expected
// positions were computed independently from the mutated text.
#include <catch2/catch.hpp>

#include "common/reader_codes.h"
#include "test/common/reader_fixture.h"

namespace kern::test {
namespace {

/// Reads `base` with `from` replaced by `to` and requires exactly the
/// diagnostics `expected` ("CODE line:col pointer") and no model.
ReadOutcome expect_errors(const std::string& from, const std::string& to, const std::vector<std::string>& expected) {
  ReadOutcome r = read_text(replace_once(kBaseManifest, from, to));
  INFO(render_human(r.diags.diagnostics(), r.file, false));
  CHECK(summary(r) == expected);
  CHECK_FALSE(r.manifest.has_value());
  return r;
}

TEST_CASE("reader reports a json syntax error at the position rapidjson gives (E0001)", "[reader][E0001]") {
  ReadOutcome r = expect_errors(R"("spec": null})", R"("spec": null,})", {"E0001 2:56 "});
  CHECK(r.diags.diagnostics()[0].message == "json syntax error: missing a name for object member");
}

TEST_CASE("reader rejects invalid utf-8 as a syntax error (E0001)", "[reader][E0001]") {
  expect_errors(R"("model": "tiny")", "\"model\": \"ti\xffny\"", {"E0001 2:38 "});
}

TEST_CASE("reader rejects a lone surrogate escape, low like high, at its backslash (E0001)", "[reader][E0001]") {
  // RapidJSON rejects a lone high surrogate itself; a lone low one it would
  // encode as CESU-8 bytes (ED B0 80), which are not UTF-8.
  ReadOutcome high = expect_errors(R"("model": "tiny")", R"("model": "ti\ud800ny")", {"E0001 2:38 "});
  ReadOutcome low = expect_errors(R"("model": "tiny")", R"("model": "ti\udc00ny")", {"E0001 2:38 "});
  CHECK(low.diags.diagnostics()[0].message.starts_with(high.diags.diagnostics()[0].message));
  expect_errors(R"("model": "tiny")", R"("model": "ti\udfffny")", {"E0001 2:38 "});
  // After a valid pair and a two-character escape, the lone one is still found.
  expect_errors(R"("model": "tiny")", R"("model": "\ud83d\ude00\n\udc00")", {"E0001 2:50 "});
  // In a key too (at the key's escape).
  expect_errors(R"("model": "tiny")", R"("model": "tiny", "\udc00": 1)", {"E0001 2:44 "});
  // A valid pair and an escaped backslash before "udc00" are fine.
  ReadOutcome pair = read_text(replace_once(kBaseManifest, R"("model": "tiny")", R"("model": "\ud83d\ude00 \\udc00")"));
  CHECK(summary(pair).empty());
  REQUIRE(pair.manifest.has_value());
  CHECK(pair.manifest->meta.model == "\xF0\x9F\x98\x80 \\udc00");
}

TEST_CASE("reader names a leading UTF-8 byte order mark instead of an invalid value (E0001)", "[reader][E0001]") {
  ReadOutcome r = read_text("\xEF\xBB\xBF" + kBaseManifest);
  REQUIRE(summary(r) == std::vector<std::string>{"E0001 1:1 "});
  CHECK_FALSE(r.manifest.has_value());
  const Diagnostic& d = r.diags.diagnostics()[0];
  CHECK(d.message == "the file starts with a UTF-8 byte order mark (EF BB BF); JSON manifests must not");
  CHECK(d.span.begin == 0);
  CHECK(d.span.end == 3);
  CHECK(d.help.find("without a BOM") != std::string::npos);
  // The same bytes later in a string are ordinary UTF-8 (U+FEFF), not a BOM.
  ReadOutcome inner = read_text(replace_once(kBaseManifest, R"("model": "tiny")", "\"model\": \"ti\xEF\xBB\xBFny\""));
  CHECK(summary(inner).empty());
  CHECK(inner.manifest.has_value());
}

TEST_CASE("reader reports an empty file and a non-object root", "[reader][E0001][E0006]") {
  ReadOutcome empty = read_text("  \n");
  CHECK(summary(empty) == std::vector<std::string>{"E0001 2:1 "});
  ReadOutcome array = read_text("[1, 2]");
  CHECK(summary(array) == std::vector<std::string>{"E0006 1:1 "});
  CHECK_FALSE(array.manifest.has_value());
}

TEST_CASE("reader rejects json nested deeper than its limit (E0001)", "[reader][E0001]") {
  std::string deep = R"({"meta": )" + std::string(200, '[') + std::string(200, ']') + "}";
  ReadOutcome r = read_text(deep);
  // The root object is level 1, so the 128th '[' (column 9 + 128) would be level 129.
  CHECK(summary(r) == std::vector<std::string>{"E0001 1:137 "});
}

TEST_CASE("reader rejects a nul byte anywhere in the file (E0002)", "[reader][E0002]") {
  std::string with_nul("\"symbols\":\0 {", 13);
  expect_errors(R"("symbols": {)", with_nul, {"E0002 3:13 "});
}

TEST_CASE("reader rejects a \\u0000 escape in a string (E0002)", "[reader][E0002]") {
  ReadOutcome r = expect_errors(R"("model": "tiny")", R"("model": "ti\u0000ny")", {"E0002 2:35 /meta/model"});
  CHECK(r.diags.diagnostics()[0].message == "meta.model: string contains a nul character (\\u0000)");
}

TEST_CASE("reader rejects characters after the root object (E0003)", "[reader][E0003]") {
  ReadOutcome r = read_text(kBaseManifest + "}\n");
  CHECK(summary(r) == std::vector<std::string>{"E0003 51:1 "});
  CHECK_FALSE(r.manifest.has_value());
  ReadOutcome second = read_text(kBaseManifest + " {}");
  CHECK(summary(second) == std::vector<std::string>{"E0003 51:2 "});
}

TEST_CASE("reader rejects a duplicate key at the second key with a note at the first (E0004)", "[reader][E0004]") {
  ReadOutcome r = expect_errors(R"("pages": {"max": 8})", R"("tokens": {"max": 8})", {"E0004 5:5 /symbols/tokens"});
  const Diagnostic& d = r.diags.diagnostics()[0];
  REQUIRE(d.notes.size() == 1);
  REQUIRE(d.notes[0].has_span);
  LineColumn first = r.file.line_column(d.notes[0].span.begin);
  CHECK(first.line == 4);
  CHECK(first.column == 5);
}

TEST_CASE("reader rejects duplicate keys inside nested objects too (E0004)", "[reader][E0004]") {
  ReadOutcome r = expect_errors(R"("pdl": true,)", R"("pdl": true, "pdl": false,)",
                                {"E0004 31:26 /kernels/rmsnorm/impl/steps/0/pdl"});
  LineColumn first = r.file.line_column(r.diags.diagnostics()[0].notes.at(0).span.begin);
  CHECK(first.line == 31);
  CHECK(first.column == 13);
}

TEST_CASE("reader rejects an unknown field with the closest known name as help (E0005)", "[reader][E0005]") {
  ReadOutcome r = expect_errors(R"("pdl": true,)", R"("pdl": true, "shared_memory": 4,)",
                                {"E0005 31:26 /kernels/rmsnorm/impl/steps/0/shared_memory"});
  CHECK(r.diags.diagnostics()[0].help == "did you mean `shared_mem`?");
}

TEST_CASE("reader lists the allowed fields when an unknown one is not a typo (E0005)", "[reader][E0005]") {
  ReadOutcome r = expect_errors(R"("pages": {"max": 8})", R"("pages": {"max": 8, "zzzzzz": 1})",
                                {"E0005 5:25 /symbols/pages/zzzzzz"});
  CHECK(r.diags.diagnostics()[0].help == "the fields allowed here are `min`, `max`");
}

TEST_CASE("reader rejects an offset on a symbol argument as an unknown field (E0005)", "[reader][E0005]") {
  expect_errors(R"({"sym": "tokens"}, {"i32": -5})", R"({"sym": "tokens", "offset": 4}, {"i32": -5})",
                {"E0005 46:105 /programs/decode/dispatches/1/args/1/offset"});
}

TEST_CASE("reader rejects a value of the wrong json type (E0006)", "[reader][E0006]") {
  ReadOutcome r = expect_errors(R"("max": 64)", R"("max": "64")", {"E0006 4:33 /symbols/tokens/max"});
  CHECK(r.diags.diagnostics()[0].message == "symbols.tokens.max: expected an unsigned integer, found a string");
  expect_errors(R"("max": 8})", R"("max": 8.0})", {"E0006 5:22 /symbols/pages/max"});
  expect_errors(R"("model": "tiny")", R"("model": null)", {"E0006 2:35 /meta/model"});
}

TEST_CASE("reader rejects a bare symbol name where an expression is expected (E0006)", "[reader][E0006]") {
  ReadOutcome r = expect_errors(R"({"mul": [{"sym": "tokens"}, 4]})", R"({"mul": ["tokens", 4]})",
                                {"E0006 27:45 /kernels/rmsnorm/impl/steps/0/grid/0/ceil_div/0/mul/0"});
  CHECK(r.diags.diagnostics()[0].help == R"(a symbol is written {"sym": "tokens"})");
}

TEST_CASE("reader type-checks the optional fields of the upstream schema (E0006-E0008)", "[reader][E0006]") {
  expect_errors(R"("pdl": true,)", R"("pdl": "yes",)", {"E0006 31:20 /kernels/rmsnorm/impl/steps/0/pdl"});
  expect_errors(R"("label": "final norm")", R"("label": 5)", {"E0006 45:40 /programs/decode/dispatches/0/label"});
  expect_errors(R"("cubin": "rmsnorm.cubin")", R"("cubin": 1)", {"E0006 29:22 /kernels/rmsnorm/impl/steps/0/cubin"});
  expect_errors(R"("sha256": null)", R"("sha256": [])", {"E0006 30:23 /kernels/rmsnorm/impl/steps/0/sha256"});
  expect_errors(R"("monotone": true)", R"("monotone": 1)", {"E0006 15:116 /buffers/ids/domain/monotone"});
  expect_errors(R"("unit": 16)", R"("unit": -1)", {"E0008 15:100 /buffers/ids/domain/unit"});
  expect_errors(R"("spec": null)", R"("spec": {"block": 8})", {"E0007 2:51 /meta/spec"});
}

TEST_CASE("reader reports a missing required field at the containing object (E0007)", "[reader][E0007]") {
  ReadOutcome r = expect_errors(R"("shape": [128], "class": "weight", "domain": null})",
                                R"("shape": [128], "domain": null})", {"E0007 13:10 /buffers/w"});
  CHECK(r.diags.diagnostics()[0].message == "buffers.w: missing required field `class`");
}

TEST_CASE("reader rejects integers outside their field's range (E0008)", "[reader][E0008]") {
  expect_errors(R"({"u8": 7})", R"({"u8": 256})", {"E0008 32:124 /kernels/rmsnorm/impl/steps/0/args/6/u8"});
  expect_errors(R"("block": [256, 1, 1])", R"("block": [4294967296, 1, 1])",
                {"E0008 26:23 /kernels/rmsnorm/impl/steps/0/block/0"});
  expect_errors(R"({"i32": -3})", R"({"i32": 2147483648})", {"E0008 39:230 /kernels/kv_write/impl/steps/0/args/2/i32"});
  expect_errors(R"("bytes_per_token": 1024)", R"("bytes_per_token": -1)", {"E0008 8:31 /states/kv/bytes_per_token"});
  expect_errors(R"({"f32": 0.5})", R"({"f32": 1e39})", {"E0008 39:286 /kernels/kv_write/impl/steps/0/args/5/f32"});
  // Larger than u64: RapidJSON hands it over as a double; still an integer out of range.
  expect_errors(R"("version": 2)", R"("version": 99999999999999999999)", {"E0008 2:23 /meta/version"});
}

TEST_CASE("reader range-checks every typed literal of a dispatch (E0008)", "[reader][E0008]") {
  const std::string from = R"({"i32": -5}, {"u32": 7}, {"i64": -9000000000}, {"u8": 255})";
  expect_errors(from, R"({"i32": -2147483649}, {"u32": 7}, {"i64": -9000000000}, {"u8": 255})",
                {"E0008 46:114 /programs/decode/dispatches/1/args/2/i32"});
  expect_errors(from, R"({"i32": -5}, {"u32": -1}, {"i64": -9000000000}, {"u8": 255})",
                {"E0008 46:127 /programs/decode/dispatches/1/args/3/u32"});
  expect_errors(from, R"({"i32": -5}, {"u32": 4294967296}, {"i64": -9000000000}, {"u8": 255})",
                {"E0008 46:127 /programs/decode/dispatches/1/args/3/u32"});
  expect_errors(from, R"({"i32": -5}, {"u32": 7}, {"i64": 9223372036854775808}, {"u8": 255})",
                {"E0008 46:139 /programs/decode/dispatches/1/args/4/i64"});
  expect_errors(from, R"({"i32": -5}, {"u32": 7}, {"i64": -9000000000}, {"u8": -1})",
                {"E0008 46:160 /programs/decode/dispatches/1/args/5/u8"});
}

TEST_CASE("reader rejects malformed parameter-type strings (E0009)", "[reader][E0009]") {
  // The interface params (line 38); the step's identical list is on line 39.
  const std::string from = R"("params": ["inout ptr", "u32", "i32", "u32", "i64", "u8"],)" + std::string("\n");
  for (const char* bad : {"inout  ptr", "buffer<bf16>", "in buffer<bf17>", "inout buffer<bf16> ", " in ptr", "In ptr",
                          "i16", "out buffer<>", "out buffer<bf16", "outbuffer<bf16>", "in\\tptr", "ptr", "",
                          "in buffer<bf16>>", "inout buffer<BF16>"}) {
    INFO("param type: `" << bad << "`");
    std::string to = replace_once(from, R"("inout ptr")", "\"" + std::string(bad) + "\"");
    expect_errors(from, to, {"E0009 38:18 /kernels/kv_write/params/0"});
  }
}

TEST_CASE("reader rejects an unknown dtype with a suggestion (E0010)", "[reader][E0010]") {
  ReadOutcome r = expect_errors(R"("dtype": "f32", "shape": ["tokens", 4])", R"("dtype": "f23", "shape": ["tokens", 4])",
                                {"E0010 21:39 /kernels/rmsnorm/impl/scratch/part/dtype"});
  CHECK(r.diags.diagnostics()[0].help == "did you mean `f32`?");
}

TEST_CASE("reader rejects an unknown buffer class (E0011)", "[reader][E0011]") {
  ReadOutcome r = expect_errors(R"("class": "output")", R"("class": "outptu")", {"E0011 14:63 /buffers/y/class"});
  CHECK(r.diags.diagnostics()[0].help == "did you mean `output`?");
}

TEST_CASE("reader rejects expression objects that are not one of the closed forms (E0012)", "[reader][E0012]") {
  const std::string from = R"({"expr": {"mul": [{"sym": "tokens"}, 32]}})";
  const std::string at = "E0012 45:129 /programs/decode/dispatches/0/args/3/expr";
  ReadOutcome r = expect_errors(from, R"({"expr": {"mull": [{"sym": "tokens"}, 32]}})", {at});
  CHECK(r.diags.diagnostics()[0].help == "did you mean `mul`?");
  expect_errors(from, R"({"expr": {"sym": "tokens", "mul": [{"sym": "tokens"}, 32]}})", {at});
  expect_errors(from, R"({"expr": {}})", {at});
}

TEST_CASE("reader rejects fixed-size arrays of the wrong length (E0013)", "[reader][E0013]") {
  expect_errors(R"("block": [256, 1, 1])", R"("block": [256, 1])", {"E0013 26:22 /kernels/rmsnorm/impl/steps/0/block"});
  expect_errors(R"({"ceil_div": [{"mul": [{"sym": "tokens"}, 4]}, 8]})",
                R"({"ceil_div": [{"mul": [{"sym": "tokens"}, 4]}, 8, 2]})",
                {"E0013 27:35 /kernels/rmsnorm/impl/steps/0/grid/0/ceil_div"});
}

TEST_CASE("reader rejects a dispatch argument with two tags, noting the second (E0014)", "[reader][E0014]") {
  ReadOutcome r = expect_errors(R"({"buf": "w"})", R"({"buf": "w", "sym": "tokens"})",
                                {"E0014 45:92 /programs/decode/dispatches/0/args/1"});
  const Diagnostic& d = r.diags.diagnostics()[0];
  REQUIRE(d.notes.size() == 1);
  LineColumn second = r.file.line_column(d.notes[0].span.begin);
  CHECK(second.line == 45);
  CHECK(second.column == 105);
}

TEST_CASE("reader rejects tagged arguments with no tag (E0014)", "[reader][E0014]") {
  ReadOutcome r = expect_errors(R"({"buf": "w"})", R"({"bufer": "w"})", {"E0014 45:92 /programs/decode/dispatches/0/args/1"});
  CHECK(r.diags.diagnostics()[0].help == "did you mean `buf` instead of `bufer`?");
  expect_errors(R"({"arg": 1}, {"arg": 2})", R"({}, {"arg": 2})", {"E0014 32:34 /kernels/rmsnorm/impl/steps/0/args/1"});
}

TEST_CASE("reader rejects a domain with both bounds and index_into (E0015)", "[reader][E0015]") {
  ReadOutcome r = expect_errors(R"({"index_into": "kv", "unit": 16)", R"({"min": 0, "index_into": "kv", "unit": 16)",
                                {"E0015 15:71 /buffers/ids/domain"});
  LineColumn note = r.file.line_column(r.diags.diagnostics()[0].notes.at(0).span.begin);
  CHECK(note.line == 15);
  CHECK(note.column == 96);
}

TEST_CASE("reader reports every mistake of a manifest in one pass", "[reader]") {
  std::string text = replace_once(kBaseManifest, R"("max": 64)", R"("max": "64")");
  text = replace_once(text, R"("class": "output")", R"("class": "outptu")");
  text = replace_once(text, R"({"u8": 7})", R"({"u8": 256})");
  text = replace_once(text, R"("pages": {"max": 8})", R"("tokens": {"max": 8})");
  ReadOutcome r = read_text(text);
  r.diags.sort_by_position();
  CHECK(summary(r) == std::vector<std::string>{"E0006 4:33 /symbols/tokens/max", "E0004 5:5 /symbols/tokens",
                                               "E0011 14:63 /buffers/y/class",
                                               "E0008 32:124 /kernels/rmsnorm/impl/steps/0/args/6/u8"});
  CHECK_FALSE(r.manifest.has_value());
}

TEST_CASE("every reader code has a catalogue entry with a failing and a fixed example", "[reader][codes]") {
  auto catalogue = reader_code_catalogue();
  REQUIRE(catalogue.size() == 15);
  for (size_t i = 0; i < catalogue.size(); ++i) {
    const DiagnosticCodeInfo& c = catalogue[i];
    INFO(c.code);
    CHECK(c.code == "E00" + std::string(i + 1 < 10 ? "0" : "") + std::to_string(i + 1));
    CHECK_FALSE(c.title.empty());
    CHECK(c.explanation.find("Failing:") != std::string_view::npos);
    CHECK(c.explanation.find("Fixed") != std::string_view::npos);
    CHECK(find_reader_code(c.code) == &c);
  }
  CHECK(find_reader_code("E0100") == nullptr);
}

}  // namespace
}  // namespace kern::test
