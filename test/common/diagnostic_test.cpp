// The diagnostics engine and the rustc-style human renderer; whole rendered
// text compared exactly, caret included (style.md §6, like ninja's
// manifest_parser_test).
#include <catch2/catch.hpp>

#include "common/build_info.h"
#include "common/diagnostic.h"
#include "common/manifest_reader.h"
#include "common/plan_format.h"
#include "common/version.h"

namespace kern {
namespace {

SourceSpan span(uint32_t begin, uint32_t end, std::string pointer = "") {
  return SourceSpan{begin, end, std::move(pointer)};
}

TEST_CASE("the human renderer prints reader errors like rustc", "[diagnostic][render]") {
  const std::string text =
      "{\n"
      "  \"meta\": {\"version\": 2, \"model\": \"m\"},\n"
      "  \"buffers\": {\"x\": {\"dtype\": \"bf16\", \"shape\": [4], \"clas\": \"input\"}},\n"
      "  \"kernels\": {},\n"
      "  \"programs\": {}\n"
      "}\n";
  SourceFile file("m.json", text);
  DiagnosticEngine diags;
  CHECK_FALSE(read_manifest(file, diags).has_value());
  diags.sort_by_position();
  const std::string expected =
      "error[E0007]: buffers.x: missing required field `class`\n"
      " --> m.json:3:20\n"
      "  |\n"
      "3 |   \"buffers\": {\"x\": {\"dtype\": \"bf16\", \"shape\": [4], \"clas\": \"input\"}},\n"
      "  |                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ missing `class`\n"
      "  |\n"
      "  = pointer: /buffers/x\n"
      "\n"
      "error[E0005]: buffers.x: unknown field `clas`\n"
      " --> m.json:3:52\n"
      "  |\n"
      "3 |   \"buffers\": {\"x\": {\"dtype\": \"bf16\", \"shape\": [4], \"clas\": \"input\"}},\n"
      "  |                                                    ^^^^^^ unknown field\n"
      "  |\n"
      "  = pointer: /buffers/x/clas\n"
      "  = help: did you mean `class`?\n"
      "\n"
      "error: 2 errors emitted\n";
  CHECK(render_human(diags.diagnostics(), file, false) == expected);
}

TEST_CASE("the human renderer prints spanned notes as their own snippet", "[diagnostic][render]") {
  SourceFile file("f.json", std::string(9, '\n') + "{\"a\": 1,\n \"a\": 2}\n");
  DiagnosticEngine diags;
  Diagnostic& d = diags.error("E0004", "manifest: duplicate key `a`", span(19, 22, "/a"));
  d.label = "duplicate key";
  d.notes.push_back(DiagnosticNote{"the first `a` is here", span(10, 13), true});
  d.notes.push_back(DiagnosticNote{"json readers disagree", SourceSpan{}, false});
  const std::string expected =
      "error[E0004]: manifest: duplicate key `a`\n"
      "  --> f.json:11:2\n"
      "   |\n"
      "11 |  \"a\": 2}\n"
      "   |  ^^^ duplicate key\n"
      "   |\n"
      "   = pointer: /a\n"
      "   = note: json readers disagree\n"
      "note: the first `a` is here\n"
      "  --> f.json:10:2\n"
      "   |\n"
      "10 | {\"a\": 1,\n"
      "   |  ^^^\n"
      "\n"
      "error: 1 error emitted\n";
  CHECK(render_human(diags.diagnostics(), file, false) == expected);
}

TEST_CASE("the human renderer cuts long source lines around the caret", "[diagnostic][render]") {
  std::string line = "[" + std::string(200, '1') + "x" + std::string(200, '2') + "]";
  SourceFile file("long.json", line);
  DiagnosticEngine diags;
  diags.error("E0001", "json syntax error: invalid value", span(201, 202));
  std::string out = render_human(diags.diagnostics(), file, false);
  // 30 characters of context before the caret, 100 shown, "..." on both ends.
  std::string shown = "..." + std::string(30, '1') + "x" + std::string(69, '2') + "...";
  CHECK(out.find("1 | " + shown + "\n") != std::string::npos);
  CHECK(out.find("\n  | " + std::string(33, ' ') + "^\n") != std::string::npos);
}

/// A one-line (minified) file of `n` array elements, each 20 bytes, with
/// one error at every element: the file and the error count grow together.
SourceFile one_line_file(size_t n, DiagnosticEngine& diags) {
  std::string text = "[";
  for (size_t i = 0; i < n; ++i) {
    const auto at = static_cast<uint32_t>(text.size());
    text += "\"\u00e9lement-" + std::to_string(100000 + i) + "\",";
    diags.error("E0010", "unknown dtype", span(at, at + 8));
  }
  text += "0]";
  return SourceFile("min.json", text);
}

TEST_CASE("rendering errors on one long line costs work linear in the number of errors", "[diagnostic][render]") {
  // Each diagnostic may look at a bounded window of the line, never the whole
  // line: the work per error stays under a constant however long the line.
  // (Before, every snippet copied and scanned the whole line: 3,000 errors on a
  // 60 KB line did ~3,000 x 60 KB of work.)
  for (size_t n : {300, 3000}) {
    DiagnosticEngine diags;
    const SourceFile file = one_line_file(n, diags);
    const uint64_t before = file.lookup_work();
    const std::string out = render_human(diags.diagnostics(), file, false);
    CHECK(out.find("error: " + std::to_string(n) + " errors emitted") != std::string::npos);
    CHECK(file.lookup_work() - before <= 4000 * n);
  }
}

TEST_CASE("the human renderer's window on a long utf-8 line sits at the right characters", "[diagnostic][render]") {
  DiagnosticEngine diags;
  const SourceFile file = one_line_file(3000, diags);
  const std::vector<Diagnostic> one{diags.diagnostics()[2000]};
  const std::string out = render_human(one, file, false);
  // Element 2000 starts at byte 1 + 2000 * 18 (é is two bytes); 30 characters
  // of context before the caret, 100 shown; the 8-byte span is 7 characters.
  CHECK(out.find(" --> min.json:1:" + std::to_string(1 + 1 + 2000 * 18) + "\n") != std::string::npos);
  const std::string shown =
      "...ment-101998\",\"\u00e9lement-101999\",\"\u00e9lement-102000\",\"\u00e9lement-102001\","
      "\"\u00e9lement-102002\",\"\u00e9lement-102003\",\"\u00e9...\n";
  CHECK(out.find("1 | " + shown) != std::string::npos);
  CHECK(out.find("\n  | " + std::string(33, ' ') + "^^^^^^^\n") != std::string::npos);
}

TEST_CASE("the human renderer shows control bytes and ANSI escapes as visible characters", "[diagnostic][render]") {
  // An ESC, a BEL and a tab on the source line, in the message, label, help,
  // note and path: none reaches the terminal; the caret stays under "x".
  const std::string text = "{\"a\x1b[2Jb\x07\t\": x}";
  SourceFile file("m\x1b]0;title\x07.json", text);
  DiagnosticEngine diags;
  Diagnostic& d = diags.error("E0001", "key `a\x1b[2Jb` is odd", span(13, 14));
  d.label = "lab\x1b";
  d.help = "help\x1b";
  d.notes.push_back(DiagnosticNote{"note\x1b", SourceSpan{}, false});
  const std::string out = render_human(diags.diagnostics(), file, false);
  CHECK(out.find('\x1b') == std::string::npos);
  CHECK(out.find('\x07') == std::string::npos);
  const std::string expected =
      "error[E0001]: key `a\u241b[2Jb` is odd\n"
      " --> m\u241b]0;title\u2407.json:1:14\n"
      "  |\n"
      "1 | {\"a\u241b[2Jb\u2407 \": x}\n"
      "  |              ^ lab\u241b\n"
      "  |\n"
      "  = note: note\u241b\n"
      "  = help: help\u241b\n"
      "\n"
      "error: 1 error emitted\n";
  CHECK(out == expected);
}

TEST_CASE("the human renderer counts warnings and prints nothing when clean", "[diagnostic][render]") {
  SourceFile file("w.json", "{}\n");
  DiagnosticEngine diags;
  CHECK(render_human(diags.diagnostics(), file, false).empty());
  diags.warning("W0001", "unused symbol `pos`", span(0, 2));
  std::string only_warning = render_human(diags.diagnostics(), file, false);
  CHECK(only_warning.rfind("warning[W0001]: unused symbol `pos`\n", 0) == 0);
  CHECK(only_warning.find("\nwarning: 1 warning emitted\n") != std::string::npos);
  diags.error("E0001", "a", span(0, 1));
  diags.error("E0002", "b", span(1, 2));
  diags.warning("W0001", "c", span(0, 2));
  std::string out = render_human(diags.diagnostics(), file, false);
  const std::string summary = "\nerror: 2 errors, 2 warnings emitted\n";
  REQUIRE(out.size() >= summary.size());
  CHECK(out.substr(out.size() - summary.size()) == summary);
  CHECK(diags.error_count() == 2);
  CHECK(diags.warning_count() == 2);
  CHECK(diags.has_errors());
}

TEST_CASE("the human renderer adds ansi colours only when asked", "[diagnostic][render]") {
  SourceFile file("c.json", "{}\n");
  DiagnosticEngine diags;
  diags.error("E0001", "bad", span(0, 1));
  CHECK(render_human(diags.diagnostics(), file, false).find('\x1b') == std::string::npos);
  std::string coloured = render_human(diags.diagnostics(), file, true);
  CHECK(coloured.find("\x1b[1;31merror[E0001]\x1b[0m") != std::string::npos);
}

TEST_CASE("the json renderer writes one escaped object per diagnostic", "[diagnostic][json]") {
  SourceFile file("dir/m \"1\".json", "{\n  \"a\": 1,\n  \"a\": 2\n}\n");
  DiagnosticEngine diags;
  Diagnostic& d = diags.error("E0004", "manifest: duplicate key `a`", span(14, 17, "/a"));
  d.label = "duplicate key";
  d.notes.push_back(DiagnosticNote{"the first `a` is here", span(4, 7, "/a"), true});
  d.notes.push_back(DiagnosticNote{"tab\there", SourceSpan{}, false});
  diags.warning("W0001", "unused", span(0, 1));
  const std::string expected =
      R"({"type":"diagnostic","level":"error","code":"E0004","message":"manifest: duplicate key `a`",)"
      R"("file":"dir/m \"1\".json","byte_offset":14,"end_byte_offset":17,)"
      R"("line":3,"column":3,"end_line":3,"end_column":6,"pointer":"/a","label":"duplicate key","notes":[)"
      R"({"message":"the first `a` is here","byte_offset":4,"line":2,"column":3,"pointer":"/a"},{"message":"tab\there"}]})"
      "\n"
      R"({"type":"diagnostic","level":"warning","code":"W0001","message":"unused","file":"dir/m \"1\".json",)"
      R"("byte_offset":0,"end_byte_offset":1,"line":1,"column":1,"end_line":1,"end_column":2,"pointer":"","notes":[]})"
      "\n";
  CHECK(render_json(diags.diagnostics(), file) == expected);
  CHECK(render_json({}, file).empty());
}

TEST_CASE("the version object names the version, commit, plan format and build type", "[diagnostic][version]") {
  CHECK(kern::version_json() == std::string(R"({"version":")") + kern::kVersion + R"(","commit":")" +
                                    kern::kBuildCommit + R"(","plan_format":)" +
                                    std::to_string(kern::kPlanFormatVersion) + R"(,"build_type":")" +
                                    kern::kBuildType + R"("})");
  CHECK(kern::version_text("kern-verify") == std::string("kern-verify ") + kern::kVersion + " (commit " +
                                                 kern::kBuildCommit + ", plan format " +
                                                 std::to_string(kern::kPlanFormatVersion) + ", " + kern::kBuildType +
                                                 " build)\n");
  CHECK(std::string(kern::kVersion) == "0.1.0");
  CHECK_FALSE(std::string(kern::kBuildCommit).empty());
}

TEST_CASE("the json summary line counts errors and warnings and carries the verdict", "[diagnostic][json]") {
  SourceFile file("m.json", "{}\n");
  DiagnosticEngine diags;
  diags.error("E0004", "a", span(0, 1));
  diags.warning("W0001", "b", span(0, 1));
  diags.warning("W0002", "c", span(0, 1));
  CHECK(render_json_summary(diags.diagnostics(), file, false) ==
        R"({"type":"summary","file":"m.json","errors":1,"warnings":2,"success":false,"kern":)" +
            kern::version_json() + "}\n");
  CHECK(render_json_summary({}, file, true) ==
        R"({"type":"summary","file":"m.json","errors":0,"warnings":0,"success":true,"kern":)" +
            kern::version_json() + "}\n");
}

TEST_CASE("sort_by_position orders by offset, then by code, keeping ties stable", "[diagnostic]") {
  DiagnosticEngine diags;
  diags.error("E0009", "third", span(30, 31));
  diags.error("E0005", "second-b", span(10, 11));
  diags.error("E0004", "second-a", span(10, 11));
  diags.error("E0001", "first", span(0, 1));
  diags.sort_by_position();
  std::vector<std::string> order;
  for (const auto& d : diags.diagnostics()) order.push_back(d.message);
  CHECK(order == std::vector<std::string>{"first", "second-a", "second-b", "third"});
}

}  // namespace
}  // namespace kern
