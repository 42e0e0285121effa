// JSON text helpers (capture_json.h).
#include "mining/capture/capture_json.h"

#include <cstdio>

namespace kern::capture {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

std::string hex_bytes(const void* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const uint8_t*>(data);
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

std::string json_address(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "\"0x%llx\"", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace kern::capture
