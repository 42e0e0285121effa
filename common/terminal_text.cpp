// Terminal-safe text (terminal_text.h): rustc's replacement table for control
// characters, plus U+FFFD for C1 controls and bytes that are not UTF-8.
#include "common/terminal_text.h"

#include <cstdint>

namespace kern {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

constexpr uint32_t kReplacement = 0xFFFD;

/// Decodes the character at text[i]: returns its code point and sets `len`
/// to its length in bytes. What is not well-formed UTF-8 (a bad lead byte,
/// a stray continuation byte, a truncated, overlong or surrogate sequence,
/// past U+10FFFF) is kReplacement, consuming the lead byte and the
/// continuation bytes after it.
uint32_t decode(std::string_view text, size_t i, size_t& len) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  len = 1;
  if (b0 < 0x80) return b0;
  size_t want = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    want = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    want = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    want = 4, cp = b0 & 0x07, min = 0x10000;
  }
  size_t run = 1;  // the lead byte and the continuation bytes after it
  while (i + run < text.size() && is_continuation(static_cast<unsigned char>(text[i + run]))) ++run;
  if (want == 0 || run < want) {
    len = run;
    return kReplacement;
  }
  for (size_t k = 1; k < want; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    len = run;
    return kReplacement;
  }
  len = want;  // continuation bytes past `want` are decoded next, as a stray run
  return cp;
}

bool needs_work(std::string_view text) {
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b >= 0x7F) return true;
  }
  return false;
}

}  // namespace

std::string terminal_safe(std::string_view text, TerminalText where) {
  if (!needs_work(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  while (i < text.size()) {
    size_t len = 1;
    const uint32_t cp = decode(text, i, len);
    i += len;
    if (cp == '\t' && where == TerminalText::kSourceLine) {
      out += ' ';
    } else if ((cp == '\t' || cp == '\n') && where == TerminalText::kMessage) {
      out += static_cast<char>(cp);
    } else if (cp < 0x20) {
      append_utf8(out, 0x2400 + cp);  // the control pictures block: U+2400 + the control's value
    } else if (cp == 0x7F) {
      append_utf8(out, 0x2421);  // "␡"
    } else if (cp == 0x200D) {
      // dropped, as rustc does: terminals render joined grapheme clusters inconsistently
    } else if ((cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) {
      append_utf8(out, kReplacement);
    } else {
      append_utf8(out, cp);
    }
  }
  return out;
}

}  // namespace kern
