// Source files and byte-offset -> line:column mapping (style.md §3).
#include "common/source.h"

#include <algorithm>

namespace kern {

SourceFile::SourceFile(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
  }
}

LineColumn SourceFile::line_column(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  // The last line start <= offset.
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
  LineColumn lc;
  lc.line = static_cast<uint32_t>(line_index + 1);
  lc.column = offset - line_starts_[line_index] + 1;
  return lc;
}

std::string SourceFile::line_text(uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  size_t begin = line_starts_[line - 1];
  size_t end = line < line_starts_.size() ? line_starts_[line] - 1 : text_.size();
  if (end > begin && text_[end - 1] == '\r') --end;
  return text_.substr(begin, end - begin);
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
