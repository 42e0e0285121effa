// Checks of numeric command-line values shared by kern-run's commands (cli_checks.h).
#include "kern-run/cli_checks.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "kern-run/cli_errors.h"

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
      if (numeric) return printable(text) + " is negative: " + expected;
    }
    return "'" + printable(text) + "' is not a whole number: " + expected;
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size() || v < min || v > max)
    return printable(text) + " is out of range: " + expected;
  return "";
}

CLI::Validator count_check(uint64_t min, uint64_t max) {
  std::string name = max == kNoLimit ? "UINT>=" + std::to_string(min)
                                     : "UINT:" + std::to_string(min) + ".." + std::to_string(max);
  return CLI::Validator(
      [min, max](std::string& text) {
        std::string error = count_error(text, min, max);
        if (!error.empty()) return error;
        // Decimal for strtoull(..., 0): no '+', no leading zero (octal).
        size_t first = text[0] == '+' ? 1 : 0;
        while (first + 1 < text.size() && text[first] == '0') ++first;
        text.erase(0, first);
        return std::string();
      },
      name);
}

namespace {

/// `v` as printf's %g writes it: "0", "0.001", "1e+06", "3.40282e+38".
std::string compact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// The range in words: "a number from 0 to 1", "a number > 0 and <= 1e+06".
std::string range_text(const RealRange& r) {
  if (r.above_min) return "a number > " + compact(r.min) + " and <= " + compact(r.max);
  return "a number from " + compact(r.min) + " to " + compact(r.max);
}

/// Whether `text` is [+-] digits [. digits] [(e|E) [+-] digits] with at
/// least one mantissa digit. Sets `at_least_one` when the number's magnitude
/// is at least 1 (its leading digit's decimal exponent is >= 0): then a
/// value from_chars cannot represent overflowed, else it underflowed.
bool decimal_syntax(std::string_view t, bool& at_least_one) {
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  size_t int_digits = 0, lead_zeros = 0, frac_zeros = 0;
  bool nonzero = false, frac_nonzero = false;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++int_digits) {
    if (t[i] != '0') nonzero = true;
    if (!nonzero) ++lead_zeros;
  }
  size_t frac_digits = 0;
  if (i < t.size() && t[i] == '.') {
    for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++frac_digits) {
      if (t[i] != '0') frac_nonzero = true;
      if (!frac_nonzero) ++frac_zeros;
    }
  }
  if (int_digits + frac_digits == 0) return false;
  int64_t exponent = 0;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) negative = t[i++] == '-';
    size_t digits = 0;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits)
      exponent = std::min<int64_t>(exponent * 10 + (t[i] - '0'), int64_t{1} << 40);  // saturates far past any double
    if (digits == 0) return false;
    if (negative) exponent = -exponent;
  }
  if (i != t.size()) return false;
  // The decimal exponent of the leading digit: 123e5 -> 7, 0.001 -> -3.
  const int64_t lead = nonzero ? static_cast<int64_t>(int_digits - lead_zeros) - 1
                               : -static_cast<int64_t>(frac_zeros) - 1;
  at_least_one = exponent + lead >= 0;
  return true;
}

}  // namespace

std::string real_error(std::string_view text, const RealRange& range) {
  const std::string expected = "expected " + range_text(range);
  bool magnitude_at_least_one = false;
  if (!decimal_syntax(text, magnitude_at_least_one)) {
    std::string lower;
    for (char c : text.substr(0, 16)) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    const std::string_view bare = std::string_view(lower).substr(lower[0] == '+' || lower[0] == '-' ? 1 : 0);
    if (bare == "nan" || bare == "inf" || bare == "infinity" || bare.starts_with("nan("))
      return printable(text) + " is not a finite number: " + expected;
    return "'" + printable(text) + "' is not a number: " + expected;
  }
  std::string_view digits = text;
  if (digits[0] == '+') digits.remove_prefix(1);  // from_chars takes '-' only
  double v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec == std::errc::result_out_of_range && magnitude_at_least_one)
    return printable(text) + " is out of range: " + expected;
  if (ec == std::errc::result_out_of_range) v = 0;  // too small to represent: 0
  else if (ec != std::errc() || p != digits.data() + digits.size())
    return "'" + printable(text) + "' is not a number: " + expected;
  const bool in = (range.above_min ? v > range.min : v >= range.min) && v <= range.max && std::isfinite(v);
  if (!in) return printable(text) + " is out of range: " + expected;
  return "";
}

CLI::Validator real_check(const RealRange& range) {
  // --help shows it after the type: "FLOAT:(0,1e+06]".
  const std::string name =
      std::string(range.above_min ? "(" : "[") + compact(range.min) + "," + compact(range.max) + "]";
  return CLI::Validator([range](std::string& text) { return real_error(text, range); }, name);
}

int parse_error_exit(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
  print_error(e.what());
  return 2;
}

}  // namespace kern::run
