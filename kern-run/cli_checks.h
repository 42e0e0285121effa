// Checks of numeric command-line values shared by kern-run's commands.
// CLI11 converts "-1" to an unsigned option by wrapping (18446744073709551615)
// and its Range validator prints doubles ("0 not in range 0.000000 to
// 1797693..."): these checks run on the text first and say what is wrong.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"

namespace kern::run {

/// Largest value of a u64 option (no limit).
inline constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

/// Checks that `text` is a whole decimal number in [min, max] (digits only,
/// an optional leading '+'). Returns "" when it is, else the message, e.g.
/// "-1 is negative: expected a whole number >= 1" or "'abc' is not a whole
/// number (expected one from 1 to 1000000)". Non-printable bytes in `text`
/// are escaped (\xNN).
std::string count_error(std::string_view text, uint64_t min, uint64_t max = kNoLimit);

/// A CLI11 validator running count_error; CLI11 prefixes its message with
/// the option name ("--chunk: 0 is out of range: expected a whole number >= 1").
CLI::Validator count_check(uint64_t min, uint64_t max = kNoLimit);

/// `text` with bytes outside printable ASCII written as \xNN, cut to
/// `max_bytes` bytes of input (then "..." is appended): safe to quote in a
/// message whatever a file held.
std::string printable(std::string_view text, size_t max_bytes = 40);

}  // namespace kern::run
