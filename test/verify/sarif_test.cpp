// The SARIF 2.1.0 renderer (kern-verify/sarif.h): the rule table is the whole
// catalogue with stable indices, results carry region (code point columns,
// byte offset/length), the JSON pointer, help and notes.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/build_info.h"
#include "common/diagnostic.h"
#include "common/plan_format.h"
#include "common/source.h"
#include "kern-verify/catalogue.h"
#include "kern-verify/sarif.h"

namespace {

kern::SourceSpan span(uint32_t b, uint32_t e, std::string pointer) {
  kern::SourceSpan s;
  s.begin = b;
  s.end = e;
  s.pointer = std::move(pointer);
  return s;
}

}  // namespace

TEST_CASE("sarif lists every catalogue code as a rule, in catalogue order", "[sarif]") {
  kern::SourceFile file("m.json", "{}\n");
  rapidjson::Document doc;
  doc.Parse(kern::verify::render_sarif({}, file).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(std::string(doc["version"].GetString()) == "2.1.0");
  const auto& run = doc["runs"][0];
  CHECK(std::string(run["tool"]["driver"]["name"].GetString()) == "kern-verify");
  CHECK(std::string(run["tool"]["driver"]["version"].GetString()) == kern::kVersion);
  const auto& props = run["tool"]["driver"]["properties"];
  CHECK(std::string(props["commit"].GetString()) == kern::kBuildCommit);
  CHECK(props["plan_format"].GetUint() == kern::kPlanFormatVersion);
  CHECK(std::string(props["build_type"].GetString()) == kern::kBuildType);
  const auto& rules = run["tool"]["driver"]["rules"];
  const auto& catalogue = kern::verify::full_catalogue();
  REQUIRE(rules.Size() == catalogue.size());
  for (rapidjson::SizeType i = 0; i < rules.Size(); ++i) {
    CHECK(std::string(rules[i]["id"].GetString()) == catalogue[i].id);
    CHECK(std::string(rules[i]["shortDescription"]["text"].GetString()) == catalogue[i].title);
    CHECK(std::string(rules[i]["defaultConfiguration"]["level"].GetString()) ==
          (catalogue[i].severity == kern::Severity::kError ? "error" : "warning"));
  }
  CHECK(run["results"].Size() == 0);
}

TEST_CASE("sarif results carry the region in code points, the pointer, help and notes", "[sarif]") {
  // Line 2 starts at byte 2; "é" is two bytes, so byte column 8 is code point column 7.
  const std::string text = "{\n \"é\": {\"x\": 1}\n}\n";
  kern::SourceFile file("dir/m.json", text);
  kern::DiagnosticEngine diags;
  const uint32_t x = static_cast<uint32_t>(text.find("\"x\""));
  kern::Diagnostic& d = diags.error("E0005", "é: unknown field `x`", span(x, x + 3, "/é/x"));
  d.label = "unknown";
  d.help = "remove it";
  d.notes.push_back(kern::DiagnosticNote{"the object is here", span(x - 1, x + 7, "/é"), true});
  d.notes.push_back(kern::DiagnosticNote{"fields are strict", kern::SourceSpan{}, false});
  diags.warning("W0001", "w", span(0, 1, ""));

  rapidjson::Document doc;
  doc.Parse(kern::verify::render_sarif(diags.diagnostics(), file).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  const auto& run = doc["runs"][0];
  CHECK(std::string(run["columnKind"].GetString()) == "unicodeCodePoints");
  CHECK(std::string(run["artifacts"][0]["location"]["uri"].GetString()) == "dir/m.json");
  const auto& results = run["results"];
  REQUIRE(results.Size() == 2);

  const auto& r = results[0];
  CHECK(std::string(r["ruleId"].GetString()) == "E0005");
  const auto& rules = run["tool"]["driver"]["rules"];
  CHECK(std::string(rules[r["ruleIndex"].GetInt()]["id"].GetString()) == "E0005");
  CHECK(std::string(r["level"].GetString()) == "error");
  CHECK(std::string(r["message"]["text"].GetString()) ==
        "é: unknown field `x`\nnote: fields are strict\nhelp: remove it");
  const auto& loc = r["locations"][0];
  const auto& region = loc["physicalLocation"]["region"];
  CHECK(region["startLine"].GetInt() == 2);
  CHECK(region["startColumn"].GetInt() == 8);  // bytes: 9
  CHECK(region["endColumn"].GetInt() == 11);
  CHECK(region["byteOffset"].GetInt() == static_cast<int>(x));
  CHECK(region["byteLength"].GetInt() == 3);
  CHECK(std::string(loc["logicalLocations"][0]["fullyQualifiedName"].GetString()) == "/é/x");
  CHECK(std::string(loc["message"]["text"].GetString()) == "unknown");
  REQUIRE(r["relatedLocations"].Size() == 1);
  CHECK(std::string(r["relatedLocations"][0]["message"]["text"].GetString()) == "the object is here");
  CHECK(std::string(r["properties"]["help"].GetString()) == "remove it");

  CHECK(std::string(results[1]["level"].GetString()) == "warning");
  CHECK(std::string(results[1]["locations"][0]["logicalLocations"][0]["fullyQualifiedName"].GetString()) == "/");
  CHECK_FALSE(results[1].HasMember("relatedLocations"));
}

TEST_CASE("sarif on a one-line manifest costs work linear in the number of results", "[sarif]") {
  // Element i of the one line starts at byte 1 + 18 i and code point 1 + 17 i
  // ("é" is two bytes). Each column comes from the file's character index,
  // never a scan from the line's start (which made 30k results take 24 s).
  const size_t n = 3000;
  std::string text = "[";
  kern::DiagnosticEngine diags;
  for (size_t i = 0; i < n; ++i) {
    const auto at = static_cast<uint32_t>(text.size());
    text += "\"\u00e9lement-" + std::to_string(100000 + i) + "\",";
    diags.error("E0010", "unknown dtype", span(at, at + 3, "/" + std::to_string(i)));
  }
  text += "0]";
  const kern::SourceFile file("min.json", text);
  const uint64_t before = file.lookup_work();
  rapidjson::Document doc;
  doc.Parse(kern::verify::render_sarif(diags.diagnostics(), file).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(file.lookup_work() - before <= 2000 * n);
  const auto& results = doc["runs"][0]["results"];
  REQUIRE(results.Size() == n);
  const auto& region = results[2000]["locations"][0]["physicalLocation"]["region"];
  CHECK(region["startLine"].GetInt() == 1);
  CHECK(region["startColumn"].GetInt() == 1 + 1 + 2000 * 17);
  CHECK(region["endColumn"].GetInt() == 1 + 1 + 2000 * 17 + 2);  // '"' and 'é': 3 bytes, 2 code points
  CHECK(region["byteOffset"].GetInt() == 1 + 2000 * 18);
}
