// Source files and byte-offset -> line:column mapping (style.md §3).
#include "common/source.h"

#include <algorithm>

namespace kern {

namespace {
bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
}  // namespace

SourceFile::SourceFile(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  char_index_.reserve(text_.size() / kCharStride + 1);
  uint32_t chars = 0;
  for (size_t i = 0; i < text_.size(); ++i) {
    if (i % kCharStride == 0) char_index_.push_back(chars);
    if (text_[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
    if (!is_continuation(text_[i])) ++chars;
  }
  if (char_index_.empty()) char_index_.push_back(0);
}

LineColumn SourceFile::line_column(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  // The last line start <= offset.
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  ++work_;
  size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
  LineColumn lc;
  lc.line = static_cast<uint32_t>(line_index + 1);
  lc.column = offset - line_starts_[line_index] + 1;
  return lc;
}

std::pair<uint32_t, uint32_t> SourceFile::line_bounds(uint32_t line) const {
  const auto size = static_cast<uint32_t>(text_.size());
  if (line == 0 || line > line_starts_.size()) return {size, size};
  uint32_t begin = line_starts_[line - 1];
  uint32_t end = line < line_starts_.size() ? line_starts_[line] - 1 : size;
  if (end > begin && text_[end - 1] == '\r') --end;
  return {begin, end};
}

std::string SourceFile::line_text(uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  auto [begin, end] = line_bounds(line);
  return std::string(slice(begin, end));
}

std::string_view SourceFile::slice(uint32_t begin, uint32_t end) const {
  const auto size = static_cast<uint32_t>(text_.size());
  end = std::min(end, size);
  begin = std::min(begin, end);
  work_ += end - begin;
  return std::string_view(text_).substr(begin, end - begin);
}

uint32_t SourceFile::chars_before(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  const uint32_t k = offset / kCharStride;
  uint32_t chars = char_index_[std::min<size_t>(k, char_index_.size() - 1)];
  for (uint32_t i = std::min<uint32_t>(k * kCharStride, offset); i < offset; ++i) {
    if (!is_continuation(text_[i])) ++chars;
  }
  work_ += 1 + offset % kCharStride;
  return chars;
}

uint32_t SourceFile::offset_of_char(uint32_t index) const {
  // The last index entry <= index; the character starts before the next entry.
  auto it = std::upper_bound(char_index_.begin(), char_index_.end(), index);
  ++work_;
  size_t k = static_cast<size_t>(it - char_index_.begin()) - 1;
  uint32_t chars = char_index_[k];
  for (size_t i = k * kCharStride; i < text_.size(); ++i) {
    ++work_;
    if (is_continuation(text_[i])) continue;
    if (chars++ == index) return static_cast<uint32_t>(i);
  }
  return static_cast<uint32_t>(text_.size());
}

std::string json_pointer_escape(const std::string& token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace kern
