// The `kern-verify` command (SPEC §2): checks a manifest like rustc checks a
// crate and, on success, writes the .kplan; or dumps a plan readably.
//
//   kern-verify MANIFEST.json [-o OUT.kplan] [--deny-warnings] [--color=WHEN]
//               [--message-format human|json|sarif] [--workspace-warn-bytes N]
//               [--no-memory-plan]
//   kern-verify --dump PLAN.kplan [--capacity TOKENS] [--message-format human|json]
//   kern-verify --explain E0133
//   kern-verify --print-catalogue      (docs/diagnostics.md)
//   kern-verify --version
//
// Exit codes: 0 ok (warnings allowed), 1 the manifest has errors (or
// warnings under --deny-warnings), 2 usage or I/O error (an empty or
// unwritable -o, a failed write to stdout), or a bad plan file.
// Human diagnostics go to stderr; the json and sarif formats go to stdout
// (they are the command's output); --dump and --explain print to stdout.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/diagnostic.h"
#include "common/file_kind.h"
#include "common/file_util.h"
#include "common/manifest_reader.h"
#include "common/source.h"
#include "common/version.h"
#include "common/terminal_text.h"
#include "kern-verify/catalogue.h"
#include "kern-verify/sarif.h"
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

/// Prints "error: MESSAGE" to stderr; names in it (paths, codes) came from
/// the user, so control bytes show as visible characters (terminal_text.h).
int fail_usage(const std::string& message) {
  std::cerr << "error: " << kern::terminal_safe(message, kern::TerminalText::kMessage) << "\n";
  return kExitUsage;
}

/// The errno of the first failed write to stdout; 0 while none failed.
int g_stdout_errno = 0;

/// Writes `text` to stdout and flushes at once, so that errno still
/// describes a failed write when it is recorded (e.g. ENOSPC on /dev/full).
void print_stdout(std::string_view text) {
  errno = 0;
  std::cout << text;
  std::cout.flush();
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
  if (failed && g_stdout_errno == 0) g_stdout_errno = errno != 0 ? errno : EIO;
}

/// `rc`, or kExitUsage with "stdout: write error: ..." when anything written
/// to stdout (by print_stdout, CLI11's --help, ...) did not reach it.
int finish_stdout(int rc) {
  errno = 0;
  std::cout.flush();
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
  if (failed && g_stdout_errno == 0) g_stdout_errno = errno != 0 ? errno : EIO;
  if (g_stdout_errno == 0) return rc;
  return fail_usage(std::string("stdout: write error: ") + std::strerror(g_stdout_errno));
}

/// Parses --workspace-warn-bytes: a decimal count of bytes that fits in 64
/// bits, no sign, no hex/octal prefix, no blanks (CLI11's own conversion
/// goes through strtoull, which takes "-1" and wraps it to 2^64-1).
bool parse_byte_count(const std::string& text, uint64_t& value) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

/// --dump: the plan at `path` as text, or as one JSON object when `json`.
int run_dump(const std::string& path, std::optional<uint64_t> capacity, bool json) {
  auto bytes = kern::read_file(path);
  if (!bytes.ok()) return fail_usage(bytes.error().message);
  const std::string& b = bytes.value();
  const std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  // A manifest or weights file instead of a plan: say what to run instead.
  if (const kern::FileKind kind = kern::sniff_file_kind(span); kind != kern::FileKind::kOther)
    return fail_usage(path + ": not a valid plan: " + kern::not_a_plan_next_step(kind, path));
  auto text = json ? kern::verify::dump_plan_json(span, capacity) : kern::verify::dump_plan(span, capacity);
  // A corrupt, truncated or foreign plan is a content error (exit 1), as
  // from kern-run (docs/runtime.md); failing to read the file stays exit 2.
  if (!text.ok()) {
    fail_usage(path + ": " + text.error().message);
    return kExitManifestErrors;
  }
  print_stdout(text.value());
  return kExitOk;
}

int run_explain(const std::string& given) {
  // Codes are upper-case and topics lower-case; either spelling is accepted
  // (`--explain e0101` is E0101, as rustc's --explain takes).
  std::string code = given, topic = given;
  for (char& c : code) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (char& c : topic) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (const auto* entry = kern::verify::find_catalogue_entry(code)) {
    print_stdout(kern::verify::render_explanation(*entry));
    return kExitOk;
  }
  if (const auto* found = kern::verify::find_catalogue_topic(topic)) {
    print_stdout(kern::verify::render_topic(*found));
    return kExitOk;
  }
  return fail_usage("no diagnostic has the code `" + kern::terminal_safe(given) +
                    "` (codes look like E0001, E0133, W0001; docs/diagnostics.md lists them all; topics: pdl)");
}

/// How run_verify prints what it found.
struct OutputOptions {
  std::string format = "human";  ///< human | json | sarif
  bool color = false;
  bool deny_warnings = false;
};

void print_diagnostics(const std::vector<kern::Diagnostic>& diags, const kern::SourceFile& file,
                       const OutputOptions& out, bool success, bool denied) {
  if (out.format == "json") {
    print_stdout(kern::render_json(diags, file) + kern::render_json_summary(diags, file, success));
    return;
  }
  if (out.format == "sarif") {
    print_stdout(kern::verify::render_sarif(diags, file));
    return;
  }
  if (!diags.empty()) std::cerr << kern::render_human(diags, file, out.color);
  if (denied) std::cerr << "error: warnings are denied (--deny-warnings); no plan written\n";
}

/// Checks `manifest_path` and, on success and when `out_path` is set,
/// writes the plan there. `out_path` is never empty (main rejects `-o ""`).
int run_verify(const std::string& manifest_path, const std::optional<std::string>& out_path, const OutputOptions& out,
               const kern::verify::VerifyOptions& options, const kern::verify::LowerOptions& lower_options) {
  if (out_path) {  // report an unwritable -o before any work, not after it
    // The same file under another spelling ("./m.json", a hard link, a
    // symlink) is caught by device and inode, not by comparing names.
    if (kern::same_file(manifest_path, *out_path))
      return fail_usage("-o " + *out_path + " is the input manifest " + manifest_path +
                        "; refusing to overwrite it with the plan (choose another output path)");
    auto writable = kern::check_output_path(*out_path);
    if (!writable.ok()) return fail_usage(writable.error().message);
  }
  auto text = kern::read_file(manifest_path);
  if (!text.ok()) return fail_usage(text.error().message);
  kern::SourceFile file(manifest_path, text.value());
  kern::DiagnosticEngine diag;
  std::optional<kern::verify::VerifiedManifest> verified;
  if (auto manifest = kern::read_manifest(file, diag)) verified = kern::verify::verify(*manifest, diag, options);
  diag.sort_by_position();
  const bool has_errors = !verified || diag.has_errors();
  const bool denied = !has_errors && out.deny_warnings && diag.warning_count() > 0;
  print_diagnostics(diag.diagnostics(), file, out, !has_errors && !denied, denied);
  if (has_errors || denied) return kExitManifestErrors;
  if (!out_path) return kExitOk;
  auto plan = kern::verify::lower(*verified, file.text(), lower_options);
  if (!plan.ok()) return fail_usage(plan.error().message);
  auto written = kern::write_file_atomic(*out_path, plan.value());
  if (!written.ok()) return fail_usage(written.error().message);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kern-verify: check a kern manifest v2 and compile it into a .kplan"};
  std::string manifest_path, out_path, dump_path, explain_code, color_when = "auto", warn_bytes;
  OutputOptions out;
  kern::verify::VerifyOptions options;
  kern::verify::LowerOptions lower_options;
  bool no_memory_plan = false;
  bool print_catalogue = false;
  app.set_version_flag("--version", [] {
    std::string line = kern::version_text("kern-verify");
    line.pop_back();  // CLI11 adds the newline
    return line;
  }(), "print the version, commit, plan format and build type, and exit");
  app.add_option("manifest", manifest_path, "manifest.json to check");
  auto* out_option = app.add_option("-o,--output", out_path, "write the plan here on success (atomically)");
  app.add_option("--dump", dump_path, "print a .kplan in readable form and exit");
  app.add_option("--explain", explain_code, "print the long explanation of a diagnostic code, or of a topic (pdl)");
  app.add_flag("--print-catalogue", print_catalogue, "print every diagnostic code as markdown (docs/diagnostics.md)");
  auto* deny_option = app.add_flag("--deny-warnings", out.deny_warnings, "treat warnings as errors (exit 1, no plan)");
  auto* color_option = app.add_option("--color", color_when, "colour human diagnostics: never, always or auto")
                           ->check(CLI::IsMember({"never", "always", "auto"}));
  auto* format_option =
      app.add_option("--message-format", out.format,
                     "human (stderr, default), json (one object per line + a summary, stdout) or sarif (SARIF 2.1.0, "
                     "stdout); with --dump: human (text) or json (one object, docs/plan-format.md)")
          ->check(CLI::IsMember({"human", "json", "sarif"}));
  auto* warn_option = app.add_option("--workspace-warn-bytes", warn_bytes,
                 "warn (W0003) about a workspace buffer larger than this many bytes at the symbols' maxima "
                 "(default 1 GiB)");
  std::string capacity_text;
  auto* capacity_option = app.add_option("--capacity", capacity_text,
                                         "with --dump: size the states at this many tokens in the memory report");
  app.add_flag("--no-memory-plan", no_memory_plan,
               "give every workspace buffer and scratch its own slot of the arena instead of sharing bytes by "
               "liveness (docs/memory-plan.md; for comparisons)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // --help prints to stdout
    return finish_stdout(rc == 0 ? kExitOk : kExitUsage);
  }
  try {
    const int modes = !manifest_path.empty() + !dump_path.empty() + !explain_code.empty() + print_catalogue;
    if (modes != 1) {
      return fail_usage(
          "give exactly one of MANIFEST.json, --dump PLAN.kplan, --explain CODE or --print-catalogue (see --help)");
    }
    const bool has_out = out_option->count() > 0;
    if (has_out && manifest_path.empty()) return fail_usage("-o needs a MANIFEST.json to compile");
    if (has_out && out_path.empty()) return fail_usage("-o needs a file name; the empty path names no file");
    if (warn_option->count() > 0 && !parse_byte_count(warn_bytes, options.workspace_warn_bytes)) {
      return fail_usage("--workspace-warn-bytes takes a number of bytes (decimal, 0 to 2^64-1), not `" +
                        warn_bytes + "`");
    }
    std::optional<uint64_t> capacity;
    if (capacity_option->count() > 0) {
      if (dump_path.empty()) return fail_usage("--capacity is a --dump option");
      uint64_t tokens = 0;
      if (!parse_byte_count(capacity_text, tokens))
        return fail_usage("--capacity takes a number of tokens (decimal, 0 to 2^64-1), not `" + capacity_text + "`");
      capacity = tokens;
    }
    if (no_memory_plan && manifest_path.empty()) return fail_usage("--no-memory-plan needs a MANIFEST.json to compile");
    // No option is silently ignored: each one a mode does not read is refused.
    if (manifest_path.empty()) {
      if (deny_option->count() > 0) return fail_usage("--deny-warnings needs a MANIFEST.json to check");
      if (color_option->count() > 0) return fail_usage("--color colours the diagnostics of a MANIFEST.json check");
      if (warn_option->count() > 0) return fail_usage("--workspace-warn-bytes needs a MANIFEST.json to check");
      if (format_option->count() > 0 && dump_path.empty())
        return fail_usage("--message-format applies to a MANIFEST.json check or a --dump");
      if (format_option->count() > 0 && out.format == "sarif")
        return fail_usage("--dump prints human text or json, not sarif (SARIF reports diagnostics)");
    }
    if (color_option->count() > 0 && out.format != "human")
      return fail_usage("--color colours human diagnostics; --message-format " + out.format + " has no colour");
    if (!dump_path.empty()) return finish_stdout(run_dump(dump_path, capacity, out.format == "json"));
    if (!explain_code.empty()) return finish_stdout(run_explain(explain_code));
    if (print_catalogue) {
      print_stdout(kern::verify::render_catalogue_markdown());
      return finish_stdout(kExitOk);
    }
    out.color = use_color(color_when);
    const std::optional<std::string> out_file = has_out ? std::optional<std::string>(out_path) : std::nullopt;
    lower_options.plan_memory = !no_memory_plan;
    return finish_stdout(run_verify(manifest_path, out_file, out, options, lower_options));
  } catch (const std::exception& e) {  // third-party exceptions stop at main (style.md §3)
    return fail_usage(std::string("internal error: ") + e.what());
  }
}
