// Source locations for manifest diagnostics (style.md §3): byte spans into a
// loaded file plus the JSON pointer of the value; line:column is computed only
// when printing, from a line-start table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
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

/// A loaded source file: its name as given by the user, its bytes, the
/// offsets where lines start, and a character index (the count of UTF-8
/// characters before every kCharStride-th byte). With both, every look-up a
/// renderer needs costs O(log n + kCharStride), however long the line: a
/// one-line (minified) manifest with N errors renders in time linear in N.
class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  /// Line and column of a byte offset (offsets past the end map to the end).
  LineColumn line_column(uint32_t offset) const;
  /// The text of 1-based line `line` without its newline (a copy: prefer
  /// line_bounds + slice for long lines).
  std::string line_text(uint32_t line) const;
  /// Byte offsets [begin, end) of 1-based line `line` without its newline or
  /// carriage return; {size, size} past the last line.
  std::pair<uint32_t, uint32_t> line_bounds(uint32_t line) const;
  /// Bytes [begin, end) of the text, clamped to it; no copy.
  std::string_view slice(uint32_t begin, uint32_t end) const;
  /// Number of UTF-8 characters (bytes that are not continuation bytes
  /// 10xxxxxx) in text()[0, offset); offsets past the end count the whole text.
  uint32_t chars_before(uint32_t offset) const;
  /// Byte offset where character `index` (counted as chars_before does)
  /// starts; text().size() when the text has no such character.
  uint32_t offset_of_char(uint32_t index) const;
  /// Work done by the look-ups above since construction: bytes scanned or
  /// handed out plus one per search. Tests bound it to prove rendering is
  /// linear in the number of diagnostics without timing anything.
  uint64_t lookup_work() const { return work_; }

  /// Bytes between two entries of the character index.
  static constexpr uint32_t kCharStride = 256;

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
  std::vector<uint32_t> char_index_;  ///< chars_before(k * kCharStride) for every k
  mutable uint64_t work_ = 0;
};

/// Escapes one reference token for a JSON pointer ("~" -> "~0", "/" -> "~1").
std::string json_pointer_escape(const std::string& token);

}  // namespace kern
