// Source files: line:column from byte offsets, line text, pointer escaping.
#include <catch2/catch.hpp>

#include "common/source.h"

#include <vector>

namespace kern {
namespace {

TEST_CASE("line_column maps byte offsets to 1-based lines and byte columns", "[source]") {
  SourceFile f("a.json", "ab\ncd\n\nxyz");
  auto lc = [&](uint32_t off) {
    LineColumn l = f.line_column(off);
    return std::to_string(l.line) + ":" + std::to_string(l.column);
  };
  CHECK(lc(0) == "1:1");
  CHECK(lc(2) == "1:3");  // the newline itself
  CHECK(lc(3) == "2:1");
  CHECK(lc(6) == "3:1");
  CHECK(lc(9) == "4:3");
  CHECK(lc(10) == "4:4");   // end of file
  CHECK(lc(999) == "4:4");  // past the end clamps to the end
}

TEST_CASE("line_column counts bytes of multi-byte utf-8 characters", "[source]") {
  SourceFile f("u.json", "\"é→\": 1");  // é = 2 bytes, → = 3 bytes
  CHECK(f.line_column(6).column == 7);  // the closing quote
}

TEST_CASE("line_text returns a line without its newline or carriage return", "[source]") {
  SourceFile f("a.json", "first\r\nsecond\n\nlast");
  CHECK(f.path() == "a.json");
  CHECK(f.line_text(1) == "first");
  CHECK(f.line_text(2) == "second");
  CHECK(f.line_text(3) == "");
  CHECK(f.line_text(4) == "last");
  CHECK(f.line_text(5) == "");
  CHECK(f.line_text(0) == "");
}

TEST_CASE("the character index counts utf-8 characters both ways across its strides", "[source]") {
  // 1,000 characters of 1, 2, 3 and 4 bytes in turn, so the index's
  // 256-byte strides fall inside characters of every length.
  const std::string cycle = "a\u00e9\u2192\U0001F600";  // 1 + 2 + 3 + 4 bytes
  std::string text;
  std::vector<uint32_t> starts;
  for (int i = 0; i < 250; ++i) {
    for (size_t len : {1, 2, 3, 4}) {
      starts.push_back(static_cast<uint32_t>(text.size()));
      text += cycle.substr(len == 1 ? 0 : len == 2 ? 1 : len == 3 ? 3 : 6, len);
    }
  }
  SourceFile f("u.json", text);
  for (uint32_t k = 0; k < starts.size(); ++k) {
    CHECK(f.offset_of_char(k) == starts[k]);
    CHECK(f.chars_before(starts[k]) == k);
    if (starts[k] + 1 < text.size()) CHECK(f.chars_before(starts[k] + 1) == k + 1);
  }
  CHECK(f.offset_of_char(1000) == text.size());
  CHECK(f.offset_of_char(5000) == text.size());
  CHECK(f.chars_before(static_cast<uint32_t>(text.size()) + 10) == 1000);
  // Bounded work per look-up, however far into the text.
  const uint64_t before = f.lookup_work();
  f.chars_before(static_cast<uint32_t>(text.size() - 1));
  f.offset_of_char(999);
  CHECK(f.lookup_work() - before <= 2 * (SourceFile::kCharStride + 2));
  SourceFile empty("e.json", "");
  CHECK(empty.chars_before(0) == 0);
  CHECK(empty.offset_of_char(0) == 0);
}

TEST_CASE("line_bounds gives a line's byte range without its newline", "[source]") {
  SourceFile f("a.json", "first\r\nsecond\n\nlast");
  CHECK(f.line_bounds(1) == std::pair<uint32_t, uint32_t>{0, 5});
  CHECK(f.line_bounds(2) == std::pair<uint32_t, uint32_t>{7, 13});
  CHECK(f.line_bounds(3) == std::pair<uint32_t, uint32_t>{14, 14});
  CHECK(f.line_bounds(4) == std::pair<uint32_t, uint32_t>{15, 19});
  CHECK(f.line_bounds(5) == std::pair<uint32_t, uint32_t>{19, 19});
  CHECK(f.slice(15, 99) == "last");
}

TEST_CASE("json pointer tokens escape tilde and slash", "[source]") {
  CHECK(json_pointer_escape("plain") == "plain");
  CHECK(json_pointer_escape("a/b") == "a~1b");
  CHECK(json_pointer_escape("~x") == "~0x");
  CHECK(json_pointer_escape("~/") == "~0~1");
  CHECK(json_pointer_escape("") == "");
}

}  // namespace
}  // namespace kern
