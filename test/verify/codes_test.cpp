// The diagnostics catalogue (kern-verify/codes.h): one entry per code, stable
// unique spellings, and an explanation with a failing and a fixed example.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "common/reader_codes.h"
#include "kern-verify/codes.h"

using namespace kern::verify;

TEST_CASE("codes catalogue lists every code in enumerator order", "[codes]") {
  const auto all = all_codes();
  REQUIRE(all.size() > 0);
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(static_cast<size_t>(all[i].code) == i);
    CHECK(&code_info(all[i].code) == &all[i]);
  }
  CHECK(all.back().code == Code::kCollectiveWithoutWorld);
}

TEST_CASE("codes have unique spellings matching their severity", "[codes]") {
  std::set<std::string_view> seen;
  for (const CodeInfo& info : all_codes()) {
    INFO(info.id);
    CHECK(seen.insert(info.id).second);
    REQUIRE(info.id.size() == 5);
    if (info.severity == CodeSeverity::kError) {
      CHECK(info.id.substr(0, 3) == "E01");  // E00xx belong to the reader
    } else {
      CHECK(info.id.substr(0, 3) == "W00");
    }
    CHECK(kern::find_reader_code(info.id) == nullptr);
  }
}

TEST_CASE("codes explanations carry a failing and a fixed example", "[codes]") {
  for (const CodeInfo& info : all_codes()) {
    INFO(info.id);
    CHECK_FALSE(info.title.empty());
    CHECK(info.explanation.find("failing:") != std::string_view::npos);
    CHECK(info.explanation.find("fixed:") != std::string_view::npos);
  }
}

TEST_CASE("codes are found by their spelling", "[codes]") {
  CHECK(find_code("E0133") == Code::kWriteThroughIn);
  CHECK(find_code("W0001") == Code::kStepWithoutCubin);
  CHECK(code_id(Code::kVersionUnsupported) == "E0100");
  CHECK_FALSE(find_code("E9999").has_value());
  CHECK_FALSE(find_code("e0133").has_value());
}

TEST_CASE("domain explanations say domains are checked for consistency but not enforced at run time", "[codes]") {
  // Domains are not lowered into the plan (schemas/plan.fbs has no field for
  // them), so no explanation may promise a run-time check.
  for (Code c : {Code::kUnknownDomainTarget, Code::kDomainBoundsInverted, Code::kDomainUnitWithoutIndex,
                 Code::kDomainUnitZero}) {
    const std::string_view text = code_info(c).explanation;
    INFO(code_id(c));
    CHECK(text.find("checked\nby the runtime") == std::string_view::npos);
    CHECK(text.find("input write") == std::string_view::npos);
  }
  CHECK(code_info(Code::kDomainBoundsInverted).explanation.find("not lowered into the plan") != std::string_view::npos);
}
