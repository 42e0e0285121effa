// Source locations for manifest diagnostics (style.md §3): byte spans into a
// loaded file plus the JSON pointer of the value; line:column is computed only
// when printing, from a line-start table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kern {

/// A byte range [begin, end) of one JSON value in a source file, and its RFC
/// 6901 JSON pointer (e.g. "/kernels/rmsnorm/impl/steps/0/grid/1").
struct SourceSpan {
  uint32_t begin = 0;  ///< byte offset of the value's first character
  uint32_t end = 0;    ///< byte offset one past its last character
  /// JSON pointer; "" is the document root. Spans of the manifest model leave
  /// it empty (computing ~50k pointers dominated reading); diagnostics get it
  /// from the offset (resolve_pointers, common/json_tree.h).
  std::string pointer;
};

/// 1-based line and column (column counts bytes, like gcc and rustc do for ASCII).
struct LineColumn {
  uint32_t line = 1;
  uint32_t column = 1;
};

/// A loaded source file: its name as given by the user, its bytes, and the
/// offsets where lines start.
class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  /// Line and column of a byte offset (offsets past the end map to the end).
  LineColumn line_column(uint32_t offset) const;
  /// The text of 1-based line `line` without its newline.
  std::string line_text(uint32_t line) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

/// Escapes one reference token for a JSON pointer ("~" -> "~0", "/" -> "~1").
std::string json_pointer_escape(const std::string& token);

}  // namespace kern
