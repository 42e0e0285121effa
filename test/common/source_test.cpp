// Source files: line:column from byte offsets, line text, pointer escaping.
#include <catch2/catch.hpp>

#include "common/source.h"

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

TEST_CASE("json pointer tokens escape tilde and slash", "[source]") {
  CHECK(json_pointer_escape("plain") == "plain");
  CHECK(json_pointer_escape("a/b") == "a~1b");
  CHECK(json_pointer_escape("~x") == "~0x");
  CHECK(json_pointer_escape("~/") == "~0~1");
  CHECK(json_pointer_escape("") == "");
}

}  // namespace
}  // namespace kern
