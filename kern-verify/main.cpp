// The `kern-verify` command (SPEC §2): checks a manifest like rustc checks a
// crate and, on success, writes the .kplan; or dumps a plan readably.
//
//   kern-verify MANIFEST.json [-o OUT.kplan] [--deny-warnings] [--color=WHEN]
//   kern-verify --dump PLAN.kplan
//   kern-verify --explain E0133
//
// Exit codes: 0 ok (warnings allowed), 1 the manifest has errors (or
// warnings under --deny-warnings), 2 usage or I/O error, or a bad plan file.
// Diagnostics go to stderr; --dump and --explain print to stdout.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <span>
#include <string>

#include "common/diagnostic.h"
#include "common/file_util.h"
#include "common/manifest_reader.h"
#include "common/reader_codes.h"
#include "common/source.h"
#include "kern-verify/codes.h"
#include "kern-verify/lower.h"
#include "kern-verify/plan_dump.h"
#include "kern-verify/verifier.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitManifestErrors = 1;
constexpr int kExitUsage = 2;

bool use_color(const std::string& when) {
  if (when == "always") return true;
  if (when == "never") return false;
  const char* term = std::getenv("TERM");
  return isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr && term != nullptr &&
         std::string(term) != "dumb";
}

int fail_usage(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return kExitUsage;
}

int run_dump(const std::string& path) {
  auto bytes = kern::read_file(path);
  if (!bytes.ok()) return fail_usage(bytes.error().message);
  const std::string& b = bytes.value();
  auto text = kern::verify::dump_plan(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size()));
  if (!text.ok()) return fail_usage(path + ": " + text.error().message);
  std::cout << text.value();
  return kExitOk;
}

int run_explain(const std::string& code) {
  if (auto c = kern::verify::find_code(code)) {
    const auto& info = kern::verify::code_info(*c);
    std::cout << info.id << ": " << info.title << "\n\n" << info.explanation << "\n";
    return kExitOk;
  }
  if (const auto* info = kern::find_reader_code(code)) {
    std::cout << info->code << ": " << info->title << "\n\n" << info->explanation << "\n";
    return kExitOk;
  }
  return fail_usage("unknown diagnostic code `" + code + "`");
}

int run_verify(const std::string& manifest_path, const std::string& out_path, bool deny_warnings, bool color) {
  auto text = kern::read_file(manifest_path);
  if (!text.ok()) return fail_usage(text.error().message);
  kern::SourceFile file(manifest_path, text.value());
  kern::DiagnosticEngine diag;
  std::optional<kern::verify::VerifiedManifest> verified;
  if (auto manifest = kern::read_manifest(file, diag)) verified = kern::verify::verify(*manifest, diag);
  diag.sort_by_position();
  if (!diag.diagnostics().empty()) std::cerr << kern::render_human(diag.diagnostics(), file, color);
  if (!verified || diag.has_errors()) return kExitManifestErrors;
  if (deny_warnings && diag.warning_count() > 0) {
    std::cerr << "error: warnings are denied (--deny-warnings); no plan written\n";
    return kExitManifestErrors;
  }
  if (out_path.empty()) return kExitOk;
  auto plan = kern::verify::lower(*verified, file.text());
  if (!plan.ok()) return fail_usage(plan.error().message);
  auto written = kern::write_file_atomic(out_path, plan.value());
  if (!written.ok()) return fail_usage(written.error().message);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kern-verify: check a kern manifest v2 and compile it into a .kplan"};
  std::string manifest_path, out_path, dump_path, explain_code, color_when = "auto";
  bool deny_warnings = false;
  app.add_option("manifest", manifest_path, "manifest.json to check");
  app.add_option("-o,--output", out_path, "write the plan here on success (atomically)");
  app.add_option("--dump", dump_path, "print a .kplan in readable form and exit");
  app.add_option("--explain", explain_code, "print the long explanation of a diagnostic code");
  app.add_flag("--deny-warnings", deny_warnings, "treat warnings as errors (exit 1, no plan)");
  app.add_option("--color", color_when, "colour diagnostics: never, always or auto")
      ->check(CLI::IsMember({"never", "always", "auto"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  try {
    const int modes = !manifest_path.empty() + !dump_path.empty() + !explain_code.empty();
    if (modes != 1) {
      return fail_usage("give exactly one of MANIFEST.json, --dump PLAN.kplan or --explain CODE (see --help)");
    }
    if (!out_path.empty() && manifest_path.empty()) return fail_usage("-o needs a MANIFEST.json to compile");
    if (!dump_path.empty()) return run_dump(dump_path);
    if (!explain_code.empty()) return run_explain(explain_code);
    return run_verify(manifest_path, out_path, deny_warnings, use_color(color_when));
  } catch (const std::exception& e) {  // third-party exceptions stop at main (style.md §3)
    return fail_usage(std::string("internal error: ") + e.what());
  }
}
