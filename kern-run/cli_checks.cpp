// Checks of numeric command-line values shared by kern-run's commands (cli_checks.h).
#include "kern-run/cli_checks.h"

#include <charconv>
#include <cstdio>

namespace kern::run {

std::string printable(std::string_view text, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

std::string count_error(std::string_view text, uint64_t min, uint64_t max) {
  std::string expected = max == kNoLimit ? "expected a whole number >= " + std::to_string(min)
                                         : "expected a whole number from " + std::to_string(min) + " to " +
                                               std::to_string(max);
  std::string_view digits = text;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  bool all_digits = !digits.empty();
  for (char c : digits) all_digits = all_digits && c >= '0' && c <= '9';
  if (!all_digits) {
    // "-1", "-0.5": a sign then a number.
    if (text.size() > 1 && text[0] == '-') {
      std::string_view rest = text.substr(1);
      bool numeric = true;
      for (char c : rest) numeric = numeric && ((c >= '0' && c <= '9') || c == '.');
      if (numeric) return std::string(text) + " is negative: " + expected;
    }
    return "'" + printable(text) + "' is not a whole number: " + expected;
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size() || v < min || v > max)
    return std::string(text) + " is out of range: " + expected;
  return "";
}

CLI::Validator count_check(uint64_t min, uint64_t max) {
  std::string name = max == kNoLimit ? "UINT>=" + std::to_string(min)
                                     : "UINT:" + std::to_string(min) + ".." + std::to_string(max);
  return CLI::Validator([min, max](std::string& text) { return count_error(text, min, max); }, name);
}

}  // namespace kern::run
