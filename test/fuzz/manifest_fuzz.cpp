// libFuzzer target: the whole kern-verify pipeline on arbitrary bytes — the
// strict reader, every verifier rule, pointer resolution, the three
// renderers and, when the manifest verifies, lowering to a .kplan that the
// loader's plan reader must then accept (a plan kern-verify writes and
// kern-load rejects is a bug, reported as a crash). Built with clang's
// -fsanitize=fuzzer,address,undefined by test/fuzz/build.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/diagnostic.h"
#include "common/json_tree.h"
#include "common/manifest_reader.h"
#include "common/source.h"
#include "kern-load/plan_file.h"
#include "kern-verify/lower.h"
#include "kern-verify/plan_dump.h"
#include "kern-verify/sarif.h"
#include "kern-verify/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kern::SourceFile file("fuzz.json", std::string(reinterpret_cast<const char*>(data), size));
  kern::DiagnosticEngine diag;
  std::optional<kern::verify::VerifiedManifest> verified;
  if (auto manifest = kern::read_manifest(file, diag)) verified = kern::verify::verify(*manifest, diag);
  kern::resolve_pointers(diag, file);
  diag.sort_by_position();
  // Renderers must cope with every span the reader and verifier produce.
  (void)kern::render_human(diag.diagnostics(), file, true);
  (void)kern::render_json(diag.diagnostics(), file);
  (void)kern::verify::render_sarif(diag.diagnostics(), file);
  if (!verified || diag.has_errors()) return 0;
  auto plan = kern::verify::lower(*verified, file.text());
  if (!plan.ok()) return 0;
  const std::string& bytes = plan.value();
  std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  auto loaded = kern::load::PlanFile::from_bytes(span, "fuzz.kplan");
  if (!loaded.ok()) {
    std::fprintf(stderr, "kern-verify wrote a plan kern-load rejects: %s\n", loaded.error().message.c_str());
    std::abort();
  }
  auto dump = kern::verify::dump_plan(span);
  if (!dump.ok()) {
    std::fprintf(stderr, "--dump rejects a plan kern-verify wrote: %s\n", dump.error().message.c_str());
    std::abort();
  }
  return 0;
}
