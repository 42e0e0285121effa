// GPT-2 byte-level alphabet (see byte_level.h).
#include "kern-run/tokenizer/byte_level.h"

#include <array>

namespace kern::tok {
namespace {

/// Bytes shown as themselves: '!'..'~', '¡'..'¬', '®'..'ÿ' (GPT-2's choice).
bool is_printable_byte(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 324> to_byte{};  // byte-level code points are < U+0144
  Tables() {
    to_byte.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = is_printable_byte(b) ? char32_t(b) : char32_t(256 + next++);
      to_char[b] = c;
      to_byte[c] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

void append_utf8(char32_t c, std::string& out) {  // c < U+0800 here
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace

char32_t byte_to_char(uint8_t b) { return tables().to_char[b]; }

int char_to_byte(char32_t c) {
  return c < tables().to_byte.size() ? tables().to_byte[c] : -1;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) append_utf8(byte_to_char(static_cast<uint8_t>(b)), out);
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view token) {
  // Every byte-level character is 1 or 2 bytes of UTF-8 (below U+0800).
  std::string out;
  out.reserve(token.size());
  const auto* p = reinterpret_cast<const unsigned char*>(token.data());
  const size_t n = token.size();
  for (size_t i = 0; i < n;) {
    char32_t c;
    if (p[i] < 0x80) {
      c = p[i];
      i += 1;
    } else if ((p[i] & 0xE0) == 0xC0 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
      c = (char32_t(p[i] & 0x1F) << 6) | (p[i + 1] & 0x3F);
      i += 2;
    } else {
      return std::nullopt;
    }
    const int b = char_to_byte(c);
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
  }
  return out;
}

}  // namespace kern::tok
