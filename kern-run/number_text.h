// One number as text by a printf format, for kern-run's reports.
#pragma once

#include <cstdio>
#include <string>

namespace kern::run {

/// `v` formatted by `printf_format`, which must take exactly one double
/// (e.g. "%.2f"); at most 63 characters are kept.
inline std::string format_double(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

}  // namespace kern::run
