// Every manifest in examples/ (written by the example generators:
// examples/*.json except the HF configs *.config.json) reads without a
// reader diagnostic.
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
      std::string name = entry.path().filename().string();
      bool is_config = name.size() > 12 && name.substr(name.size() - 12) == ".config.json";
      if (entry.path().extension() == ".json" && !is_config) {
        manifests.push_back(entry.path());
      }
    }
  }
  std::sort(manifests.begin(), manifests.end());
  // The generated manifests are committed (examples/README.md); none found
  // means the scan itself is broken.
  REQUIRE_FALSE(manifests.empty());
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
