// terminal_safe (common/terminal_text.h): rustc's replacements for control
// characters, U+FFFD for C1 controls and bytes that are not UTF-8, and one
// output character per input character so carets stay aligned.
#include <catch2/catch.hpp>

#include "common/terminal_text.h"

namespace kern {
namespace {

TEST_CASE("plain text and printable utf-8 pass unchanged", "[terminal]") {
  CHECK(terminal_safe("rmsnorm.weight") == "rmsnorm.weight");
  CHECK(terminal_safe("caf\u00e9 \u2192 \U0001F600") == "caf\u00e9 \u2192 \U0001F600");
  CHECK(terminal_safe("") == "");
}

TEST_CASE("c0 controls and del become control pictures, as rustc prints them", "[terminal]") {
  CHECK(terminal_safe("\x1b[31mred\x1b[0m") == "\u241b[31mred\u241b[0m");
  CHECK(terminal_safe(std::string_view("\0\x01\x07\x08\x7f", 5)) == "\u2400\u2401\u2407\u2408\u2421");
  CHECK(terminal_safe("a\rb\x0b\x0c\x1f") == "a\u240db\u240b\u240c\u241f");
  // A name shows newlines and tabs too; a message keeps its lines; a source
  // line shows a tab as one space (one column, like every other character).
  CHECK(terminal_safe("a\nb\tc") == "a\u240ab\u2409c");
  CHECK(terminal_safe("a\nb\tc\x1b", TerminalText::kMessage) == "a\nb\tc\u241b");
  CHECK(terminal_safe("a\tb\x1b", TerminalText::kSourceLine) == "a b\u241b");
}

TEST_CASE("bidi controls, c1 controls and bytes that are not utf-8 become U+FFFD; zwj is dropped", "[terminal]") {
  CHECK(terminal_safe("a\u202eb\u2066c") == "a\ufffdb\ufffdc");
  CHECK(terminal_safe("a\u200db") == "ab");
  CHECK(terminal_safe("a\u009b31mb\u0085") == "a\ufffd31mb\ufffd");  // U+009B: the 8-bit CSI
  CHECK(terminal_safe("a\x9b" "31m") == "a\ufffd31m");               // a bare 9B byte (latin-1 CSI)
  CHECK(terminal_safe("\xff\xfe") == "\ufffd\ufffd");
  CHECK(terminal_safe("\xed\xb0\x80") == "\ufffd");        // a surrogate (CESU-8): one character
  CHECK(terminal_safe("\xc0\xaf") == "\ufffd");             // overlong '/'
  CHECK(terminal_safe("\xe2\x82") == "\ufffd");             // truncated
  CHECK(terminal_safe("\xf4\x90\x80\x80") == "\ufffd");     // past U+10FFFF
}

}  // namespace
}  // namespace kern
