// Every manifest in examples/ (written by the example generators) reads
// without a reader diagnostic. Until a generator has written one, the scan
// finds nothing and the case only warns.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "common/file_util.h"
#include "common/manifest_reader.h"

namespace kern {
namespace {

TEST_CASE("every example manifest reads without diagnostics", "[reader][examples]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(KERN_SOURCE_ROOT) / "examples";
  std::vector<fs::path> manifests;
  if (fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".json" && entry.path().filename().string().find("manifest") != std::string::npos) {
        manifests.push_back(entry.path());
      }
    }
  }
  std::sort(manifests.begin(), manifests.end());
  if (manifests.empty()) WARN("no examples/*manifest*.json yet; nothing to read");
  for (const fs::path& p : manifests) {
    INFO(p.string());
    auto text = read_file(p.string());
    REQUIRE(text.ok());
    SourceFile file(p.string(), std::move(*text));
    DiagnosticEngine diags;
    auto m = read_manifest(file, diags);
    INFO(render_human(diags.diagnostics(), file, false));
    CHECK(diags.diagnostics().empty());
    REQUIRE(m.has_value());
    CHECK_FALSE(m->kernels.empty());
    CHECK_FALSE(m->programs.empty());
  }
}

}  // namespace
}  // namespace kern
