// Checks of numeric command-line values shared by kern-run's commands (run,
// compare, bench, serve). Every numeric option is registered through
// add_number_option, which checks the option's text before CLI11 converts
// it: CLI11 alone converts "-1" and "18446744073709551616" to a u64 option
// as 18446744073709551615 (strtoull wraps, then saturates), reads "010" as
// octal, lets "nan" through PositiveNumber, and its Range validator prints
// doubles in full ("0 not in range 0.000000 to 1797693...").
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"

namespace kern::run {

/// Largest value of a u64 option (no limit).
inline constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

/// The values an integer option accepts: whole numbers from `min` to `max`
/// (both included; add_number_option lowers `max` to what the option's type
/// holds).
struct CountRange {
  uint64_t min = 0;
  uint64_t max = kNoLimit;
};

/// The values a floating-point option accepts: finite numbers from `min` to
/// `max`, both included unless `above_min` (then `min` itself is refused: "a
/// number > 0"). add_number_option lowers `max` to the type's largest finite
/// value.
struct RealRange {
  double min = 0;
  double max = std::numeric_limits<double>::max();
  bool above_min = false;
};

/// Checks that `text` is a whole decimal number in [min, max] (digits only,
/// an optional leading '+'). Returns "" when it is, else the message, e.g.
/// "-1 is negative: expected a whole number >= 1" or "'abc' is not a whole
/// number (expected one from 1 to 1000000)". Non-printable bytes in `text`
/// are escaped (\xNN).
std::string count_error(std::string_view text, uint64_t min, uint64_t max = kNoLimit);

/// A CLI11 validator running count_error; CLI11 prefixes its message with
/// the option name ("--chunk: 0 is out of range: expected a whole number >= 1").
/// A number it accepts is rewritten without its '+' and leading zeros, so
/// that CLI11 (strtoull with base 0) reads "010" as 10, not octal 8: add it
/// with Option::transform (Option::check hands a validator a copy).
CLI::Validator count_check(uint64_t min, uint64_t max = kNoLimit);

/// Checks that `text` is a finite decimal number in `range`: an optional
/// sign, digits with an optional '.', an optional exponent (no hex, no
/// "inf", "nan" or spaces). Returns "" when it is, else the message with the
/// range printed compactly (%g), e.g. "nan is not a finite number: expected
/// a number > 0 and <= 1e+06", "1e999 is out of range: expected a number
/// from 0 to 1", "'x' is not a number: expected ...". A value too small to
/// represent (1e-999) counts as 0.
std::string real_error(std::string_view text, const RealRange& range);

/// A CLI11 validator running real_error.
CLI::Validator real_check(const RealRange& range);

namespace detail {
template <typename T>
struct NumberTarget {
  using type = T;
};
template <typename T>
struct NumberTarget<std::optional<T>> {
  using type = T;
};
}  // namespace detail

/// The one way kern-run's commands register a numeric option: `target`'s
/// type (an integer or floating-point type, or std::optional of one) picks
/// the check that runs on the text before CLI11 converts it. An integer
/// option takes whole decimal numbers in `range`, never more than its type
/// holds (so "-1" or 2^64 is refused, never wrapped or saturated); a
/// floating-point one finite numbers in `range`, never beyond its type's
/// largest finite value. A refused value ends the parse with CLI11's
/// ValidationError, "--name: <count_error or real_error>" (exit code 2
/// through parse_error_exit). Returns the option, for chaining.
template <typename Target, typename T = typename detail::NumberTarget<Target>::type>
  requires std::integral<T> && (!std::same_as<T, bool>)
CLI::Option* add_number_option(CLI::App& app, const std::string& name, Target& target, const std::string& help,
                               CountRange range = {}) {
  const uint64_t type_max = static_cast<uint64_t>(std::numeric_limits<T>::max());
  // transform, not check: CLI11 runs a check on a copy of the text.
  return app.add_option(name, target, help)->transform(count_check(range.min, std::min(range.max, type_max)));
}

/// add_number_option for a floating-point target (see above).
template <typename Target, typename T = typename detail::NumberTarget<Target>::type>
  requires std::floating_point<T>
CLI::Option* add_number_option(CLI::App& app, const std::string& name, Target& target, const std::string& help,
                               RealRange range) {
  range.max = std::min(range.max, static_cast<double>(std::numeric_limits<T>::max()));
  return app.add_option(name, target, help)->check(real_check(range));
}

/// Ends a parse that threw `e`: --help and --version are printed by CLI11
/// (returns 0); any other error is printed as one line, "kern-run: error:
/// <CLI11's message, which names the option>" (print_error), and returns 2.
int parse_error_exit(const CLI::App& app, const CLI::ParseError& e);

/// `text` with bytes outside printable ASCII written as \xNN, cut to
/// `max_bytes` bytes of input (then "..." is appended): safe to quote in a
/// message whatever a file held.
std::string printable(std::string_view text, size_t max_bytes = 40);

}  // namespace kern::run
