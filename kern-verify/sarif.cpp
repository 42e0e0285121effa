// SARIF 2.1.0 writer (sarif.h). Spec: OASIS "Static Analysis Results
// Interchange Format (SARIF) Version 2.1.0", sections 3.13 (sarifLog), 3.14
// (run), 3.19 (toolComponent), 3.27 (result), 3.30 (region), 3.49
// (reportingDescriptor).
#include "kern-verify/sarif.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/build_info.h"
#include "common/json_tree.h"
#include "common/version.h"
#include "kern-verify/catalogue.h"

namespace kern::verify {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void str(Writer& w, const char* key, std::string_view v) {
  w.Key(key);
  w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
}

void text(Writer& w, const char* key, std::string_view v) {
  w.Key(key);
  w.StartObject();
  str(w, "text", v);
  w.EndObject();
}

const char* level(Severity s) { return s == Severity::kError ? "error" : "warning"; }

/// 1-based column in Unicode code points of byte `offset` (SARIF's
/// "unicodeCodePoints" column kind), from the file's character index: bounded
/// work per look-up, so a one-line manifest with N findings costs O(N).
uint32_t code_point_column(const SourceFile& file, uint32_t offset) {
  const LineColumn lc = file.line_column(offset);
  const uint32_t line_start = offset >= lc.column - 1 ? offset - (lc.column - 1) : 0;
  return file.chars_before(offset) - file.chars_before(line_start) + 1;
}

void physical_location(Writer& w, const SourceFile& file, const SourceSpan& span) {
  w.Key("physicalLocation");
  w.StartObject();
  w.Key("artifactLocation");
  w.StartObject();
  str(w, "uri", file.path());
  w.Key("index");
  w.Uint(0);
  w.EndObject();
  const uint32_t end = std::max(span.end, span.begin);
  const LineColumn b = file.line_column(span.begin);
  const LineColumn e = file.line_column(end);
  w.Key("region");
  w.StartObject();
  w.Key("startLine");
  w.Uint(b.line);
  w.Key("startColumn");
  w.Uint(code_point_column(file, span.begin));
  w.Key("endLine");
  w.Uint(e.line);
  w.Key("endColumn");
  w.Uint(code_point_column(file, end));
  w.Key("byteOffset");
  w.Uint(span.begin);
  w.Key("byteLength");
  w.Uint(end - span.begin);
  w.EndObject();
  w.EndObject();
}

void logical_location(Writer& w, const SourceSpan& span) {
  w.Key("logicalLocations");
  w.StartArray();
  w.StartObject();
  str(w, "fullyQualifiedName", span.pointer.empty() ? "/" : span.pointer);
  str(w, "kind", "element");
  w.EndObject();
  w.EndArray();
}

void rules(Writer& w) {
  w.Key("rules");
  w.StartArray();
  for (const CatalogueEntry& e : full_catalogue()) {
    w.StartObject();
    str(w, "id", e.id);
    text(w, "shortDescription", e.title);
    text(w, "fullDescription", e.explanation);
    text(w, "help", render_explanation(e));
    w.Key("defaultConfiguration");
    w.StartObject();
    str(w, "level", level(e.severity));
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
}

int rule_index(const std::string& code) {
  const auto& all = full_catalogue();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].id == code) return static_cast<int>(i);
  }
  return -1;
}

void result(Writer& w, const Diagnostic& d, const SourceFile& file) {
  w.StartObject();
  str(w, "ruleId", d.code);
  if (int idx = rule_index(d.code); idx >= 0) {
    w.Key("ruleIndex");
    w.Int(idx);
  }
  str(w, "level", level(d.severity));
  std::string message = d.message;
  for (const DiagnosticNote& n : d.notes) {
    if (!n.has_span) message += "\nnote: " + n.message;
  }
  if (!d.help.empty()) message += "\nhelp: " + d.help;
  text(w, "message", message);
  w.Key("locations");
  w.StartArray();
  w.StartObject();
  physical_location(w, file, d.span);
  logical_location(w, d.span);
  if (!d.label.empty()) text(w, "message", d.label);
  w.EndObject();
  w.EndArray();
  int related = 0;
  for (const DiagnosticNote& n : d.notes) related += n.has_span ? 1 : 0;
  if (related > 0) {
    w.Key("relatedLocations");
    w.StartArray();
    int id = 0;
    for (const DiagnosticNote& n : d.notes) {
      if (!n.has_span) continue;
      w.StartObject();
      w.Key("id");
      w.Int(id++);
      physical_location(w, file, n.span);
      logical_location(w, n.span);
      text(w, "message", n.message);
      w.EndObject();
    }
    w.EndArray();
  }
  w.Key("properties");
  w.StartObject();
  str(w, "jsonPointer", d.span.pointer);
  if (!d.help.empty()) str(w, "help", d.help);
  w.EndObject();
  w.EndObject();
}

}  // namespace

std::string render_sarif(const std::vector<Diagnostic>& unresolved, const SourceFile& file) {
  const std::vector<Diagnostic> diags = with_pointers(unresolved, file);
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  str(w, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
  str(w, "version", "2.1.0");
  w.Key("runs");
  w.StartArray();
  w.StartObject();
  w.Key("tool");
  w.StartObject();
  w.Key("driver");
  w.StartObject();
  str(w, "name", "kern-verify");
  str(w, "version", kVersion);
  // SARIF's property bag (§3.8) for the rest of --version: commit, plan format, build type.
  w.Key("properties");
  const std::string version = version_json();
  w.RawValue(version.data(), version.size(), rapidjson::kObjectType);
  rules(w);
  w.EndObject();
  w.EndObject();
  str(w, "columnKind", "unicodeCodePoints");
  w.Key("artifacts");
  w.StartArray();
  w.StartObject();
  w.Key("location");
  w.StartObject();
  str(w, "uri", file.path());
  w.EndObject();
  str(w, "mimeType", "application/json");
  w.EndObject();
  w.EndArray();
  w.Key("results");
  w.StartArray();
  for (const Diagnostic& d : diags) result(w, d, file);
  w.EndArray();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

}  // namespace kern::verify
