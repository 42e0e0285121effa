// Diagnostics shared by the manifest reader and the verifier (style.md §4):
// each check reports and moves on; the engine collects everything; renderers
// (human, JSON, ...) are separate from collection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/source.h"

namespace kern {

enum class Severity : uint8_t { kError, kWarning };

/// A secondary location with a message ("the param type was declared here").
struct DiagnosticNote {
  std::string message;
  SourceSpan span;
  bool has_span = false;
};

/// One finding. `code` is stable ("E0001"; warnings "W0001") and listed in the
/// diagnostics catalogue (docs/diagnostics.md). `message` is lower case and
/// names the subject, the value found and the limit with units.
struct Diagnostic {
  Severity severity = Severity::kError;
  std::string code;
  std::string message;
  SourceSpan span;       ///< primary location
  std::string label;     ///< short text printed under the caret (may be empty)
  std::string help;      ///< "help:" line (may be empty)
  std::vector<DiagnosticNote> notes;
};

/// Collects diagnostics for one source file. Never stops at the first error.
class DiagnosticEngine {
 public:
  /// Records an error and returns it for adding help/notes.
  Diagnostic& error(std::string code, std::string message, SourceSpan span);
  /// Records a warning and returns it for adding help/notes.
  Diagnostic& warning(std::string code, std::string message, SourceSpan span);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  /// Mutable access for post-processing (filling JSON pointers, json_tree.h).
  std::vector<Diagnostic>& mutable_diagnostics() { return diagnostics_; }
  size_t error_count() const;
  size_t warning_count() const;
  bool has_errors() const { return error_count() > 0; }
  /// Sorts by source position (begin offset, then code) for deterministic output.
  void sort_by_position();

 private:
  Diagnostic& add(Severity severity, std::string code, std::string message, SourceSpan span);
  std::vector<Diagnostic> diagnostics_;
};

/// Renders diagnostics like rustc (`error[E0001]: ...`, `--> file:line:col`,
/// the JSON pointer, the source line with a caret, `help:`/`note:` lines) and
/// a final count line. `color` adds ANSI colours.
std::string render_human(const std::vector<Diagnostic>& diags, const SourceFile& file, bool color);

/// Renders diagnostics for machines (style.md §4): one JSON object per line,
/// `{"type": "diagnostic", "level": "error"|"warning", "code": "E0005",
/// "message": ..., "file": ..., "byte_offset": 14, "end_byte_offset": 17,
/// "line": 4, "column": 7, "end_line": 4, "end_column": 13, "pointer": ...,
/// "label": ..., "help": ..., "notes": [{"message": ..., "byte_offset": ..,
/// "line": .., "column": .., "pointer": ..}]}`; lines and columns are
/// 1-based, columns and offsets count bytes, ends are exclusive; empty
/// label/help are omitted, a note without a location has only "message".
/// No summary line (render_json_summary); an empty list renders as "".
std::string render_json(const std::vector<Diagnostic>& diags, const SourceFile& file);

/// The final line of the JSON message format: `{"type": "summary", "file":
/// ..., "errors": N, "warnings": N, "success": true|false, "kern": {the
/// version_json() object of common/version.h}}` and a newline.
/// `success` is the caller's verdict (false also when warnings are denied).
std::string render_json_summary(const std::vector<Diagnostic>& diags, const SourceFile& file, bool success);

}  // namespace kern
