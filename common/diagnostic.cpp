// Diagnostic collection and the rustc-style human renderer (style.md §4).
// Columns are 1-based byte offsets within the line (SourceFile::line_column);
// the caret under the source line is aligned by UTF-8 characters so it sits
// under the right text on a terminal even after multi-byte characters.
#include "common/diagnostic.h"
#include "common/version.h"

#include <algorithm>
#include <string_view>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/json_tree.h"
#include "common/terminal_text.h"

namespace kern {
namespace {

constexpr size_t kMaxLineWidth = 100;   // characters shown of one source line
constexpr size_t kContextBefore = 30;   // characters kept left of the caret when cutting

struct Style {
  bool on;
  std::string apply(const char* code, const std::string& text) const {
    if (!on) return text;
    return std::string(code) + text + "\x1b[0m";
  }
};

constexpr const char* kRed = "\x1b[1;31m";
constexpr const char* kYellow = "\x1b[1;33m";
constexpr const char* kBlue = "\x1b[1;34m";
constexpr const char* kBold = "\x1b[1m";
constexpr const char* kCyan = "\x1b[1;36m";
constexpr const char* kGreen = "\x1b[1;32m";

size_t digits(uint32_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

/// Appends "  --> file:line:col", the source line and the caret line. Every
/// look-up goes through the file's line and character indexes and only the
/// window around the caret is read, so the cost per snippet is bounded
/// however long the line (a minified manifest is one line).
void render_snippet(std::string& out, const SourceFile& file, const SourceSpan& span, const std::string& label,
                    size_t width, const char* caret_colour, const Style& st) {
  LineColumn lc = file.line_column(span.begin);
  std::string pad(width, ' ');
  out += pad + st.apply(kBlue, "-->") + " " + terminal_safe(file.path()) + ":" + std::to_string(lc.line) + ":" +
         std::to_string(lc.column) + "\n";
  std::string bar = pad + " " + st.apply(kBlue, "|");
  out += bar + "\n";

  // Characters are counted from the line's start: [line_begin, line_end) holds
  // the line without its newline; the span is clipped to it.
  const auto [line_begin, line_end] = file.line_bounds(lc.line);
  const uint32_t start_byte = std::min(span.begin, line_end);
  const uint32_t span_bytes = span.end > span.begin ? span.end - span.begin : 1;
  const uint32_t end_byte = std::min<uint64_t>(uint64_t{start_byte} + span_bytes, line_end);
  const uint32_t base = file.chars_before(line_begin);
  const size_t num_chars = file.chars_before(line_end) - base;
  const size_t caret_begin = file.chars_before(start_byte) - base;
  const size_t caret_end = std::max<size_t>(file.chars_before(end_byte) - base, caret_begin + 1);

  // Only the window around the caret is copied; control characters show as
  // visible ones (terminal_safe), one per character, so the caret stays aligned.
  size_t win_begin = 0;
  size_t win_end = num_chars;
  if (num_chars > kMaxLineWidth) {
    win_begin = caret_begin > kContextBefore ? caret_begin - kContextBefore : 0;
    win_end = std::min(num_chars, win_begin + kMaxLineWidth);
  }
  std::string shown;
  if (win_begin > 0) shown += "...";
  const uint32_t from = std::min(file.offset_of_char(static_cast<uint32_t>(base + win_begin)), line_end);
  const uint32_t to = std::min(file.offset_of_char(static_cast<uint32_t>(base + win_end)), line_end);
  shown += terminal_safe(file.slice(from, to), TerminalText::kSourceLine);
  if (win_end < num_chars) shown += "...";

  std::string num = std::to_string(lc.line);
  out += st.apply(kBlue, std::string(width - num.size(), ' ') + num + " |") + (shown.empty() ? "" : " " + shown) +
         "\n";
  size_t caret_col = caret_begin - win_begin + (win_begin > 0 ? 3 : 0);
  size_t caret_len = std::min(caret_end, std::max(win_end, caret_begin + 1)) - caret_begin;
  std::string carets(std::max<size_t>(caret_len, 1), '^');
  out += bar + " " + std::string(caret_col, ' ') +
         st.apply(caret_colour, carets + (label.empty() ? "" : " " + terminal_safe(label))) + "\n";
}

}  // namespace

Diagnostic& DiagnosticEngine::add(Severity severity, std::string code, std::string message, SourceSpan span) {
  Diagnostic d;
  d.severity = severity;
  d.code = std::move(code);
  d.message = std::move(message);
  d.span = std::move(span);
  diagnostics_.push_back(std::move(d));
  return diagnostics_.back();
}

Diagnostic& DiagnosticEngine::error(std::string code, std::string message, SourceSpan span) {
  return add(Severity::kError, std::move(code), std::move(message), std::move(span));
}

Diagnostic& DiagnosticEngine::warning(std::string code, std::string message, SourceSpan span) {
  return add(Severity::kWarning, std::move(code), std::move(message), std::move(span));
}

size_t DiagnosticEngine::error_count() const {
  return static_cast<size_t>(std::count_if(diagnostics_.begin(), diagnostics_.end(),
                                           [](const Diagnostic& d) { return d.severity == Severity::kError; }));
}

size_t DiagnosticEngine::warning_count() const { return diagnostics_.size() - error_count(); }

void DiagnosticEngine::sort_by_position() {
  std::stable_sort(diagnostics_.begin(), diagnostics_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.span.begin != b.span.begin) return a.span.begin < b.span.begin;
    return a.code < b.code;
  });
}

std::string render_human(const std::vector<Diagnostic>& unresolved, const SourceFile& file, bool color) {
  const std::vector<Diagnostic> diags = with_pointers(unresolved, file);
  Style st{color};
  std::string out;
  size_t errors = 0;
  size_t warnings = 0;
  for (const Diagnostic& d : diags) {
    bool is_error = d.severity == Severity::kError;
    (is_error ? errors : warnings)++;
    const char* colour = is_error ? kRed : kYellow;
    // Gutter width: the widest line number printed for this diagnostic.
    uint32_t max_line = file.line_column(d.span.begin).line;
    for (const auto& n : d.notes) {
      if (n.has_span) max_line = std::max(max_line, file.line_column(n.span.begin).line);
    }
    size_t width = digits(max_line);
    std::string pad(width + 1, ' ');

    if (!out.empty()) out += "\n";
    out += st.apply(colour, std::string(is_error ? "error" : "warning") + "[" + d.code + "]") +
           st.apply(kBold, ": " + terminal_safe(d.message)) + "\n";
    render_snippet(out, file, d.span, d.label, width, colour, st);

    bool trailer = !d.span.pointer.empty() || !d.help.empty();
    for (const auto& n : d.notes) trailer = trailer || !n.has_span;
    if (trailer) out += pad + st.apply(kBlue, "|") + "\n";
    if (!d.span.pointer.empty()) out += pad + st.apply(kBlue, "=") + " pointer: " + terminal_safe(d.span.pointer) + "\n";
    for (const auto& n : d.notes) {
      if (!n.has_span) out += pad + st.apply(kBlue, "=") + " " + st.apply(kBold, "note") + ": " + terminal_safe(n.message) + "\n";
    }
    if (!d.help.empty()) out += pad + st.apply(kBlue, "=") + " " + st.apply(kBold, "help") + ": " + terminal_safe(d.help) + "\n";
    for (const auto& n : d.notes) {
      if (!n.has_span) continue;
      out += st.apply(kGreen, "note") + st.apply(kBold, ": " + terminal_safe(n.message)) + "\n";
      render_snippet(out, file, n.span, "", width, kCyan, st);
    }
  }
  if (errors == 0 && warnings == 0) return out;
  auto plural = [](size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
  };
  std::string summary;
  if (errors > 0) summary = plural(errors, "error");
  if (warnings > 0) summary += (summary.empty() ? "" : ", ") + plural(warnings, "warning");
  out += "\n" + st.apply(errors > 0 ? kRed : kYellow, errors > 0 ? "error" : "warning") +
         st.apply(kBold, ": " + summary + " emitted") + "\n";
  return out;
}

namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void write_string(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void write_position(JsonWriter& w, const SourceFile& file, const SourceSpan& span, bool with_end) {
  LineColumn begin = file.line_column(span.begin);
  w.Key("byte_offset");
  w.Uint(span.begin);
  if (with_end) {
    w.Key("end_byte_offset");
    w.Uint(std::max(span.end, span.begin));
  }
  w.Key("line");
  w.Uint(begin.line);
  w.Key("column");
  w.Uint(begin.column);
  if (with_end) {
    LineColumn end = file.line_column(std::max(span.end, span.begin));
    w.Key("end_line");
    w.Uint(end.line);
    w.Key("end_column");
    w.Uint(end.column);
  }
  write_string(w, "pointer", span.pointer);
}

}  // namespace

std::string render_json(const std::vector<Diagnostic>& unresolved, const SourceFile& file) {
  const std::vector<Diagnostic> diags = with_pointers(unresolved, file);
  std::string out;
  for (const Diagnostic& d : diags) {
    rapidjson::StringBuffer buf;
    JsonWriter w(buf);
    w.StartObject();
    write_string(w, "type", "diagnostic");
    write_string(w, "level", d.severity == Severity::kError ? "error" : "warning");
    write_string(w, "code", d.code);
    write_string(w, "message", d.message);
    write_string(w, "file", file.path());
    write_position(w, file, d.span, true);
    if (!d.label.empty()) write_string(w, "label", d.label);
    if (!d.help.empty()) write_string(w, "help", d.help);
    w.Key("notes");
    w.StartArray();
    for (const DiagnosticNote& n : d.notes) {
      w.StartObject();
      write_string(w, "message", n.message);
      if (n.has_span) write_position(w, file, n.span, false);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    out.append(buf.GetString(), buf.GetSize());
    out += '\n';
  }
  return out;
}

std::string render_json_summary(const std::vector<Diagnostic>& diags, const SourceFile& file, bool success) {
  size_t errors = 0;
  for (const Diagnostic& d : diags) errors += d.severity == Severity::kError ? 1 : 0;
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  write_string(w, "type", "summary");
  write_string(w, "file", file.path());
  w.Key("errors");
  w.Uint64(errors);
  w.Key("warnings");
  w.Uint64(diags.size() - errors);
  w.Key("success");
  w.Bool(success);
  w.Key("kern");  // the build that checked the file (common/version.h)
  const std::string version = version_json();
  w.RawValue(version.data(), version.size(), rapidjson::kObjectType);
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

}  // namespace kern
