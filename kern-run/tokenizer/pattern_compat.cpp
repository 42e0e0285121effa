// Oniguruma-compatible spelling of split regexes for PCRE2 (see pattern_compat.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "kern-run/tokenizer/pattern_compat.h"

#include <pcre2.h>
#include <unicode/uchar.h>
#include <unicode/uniset.h>
#include <unicode/unistr.h>
#include <unicode/uversion.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

namespace kern::tok {
namespace {

constexpr std::string_view kOnigSpaceMembers = "\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}";

bool is_general_category(std::string_view name) {
  static const char* const kNames[] = {"L",  "Lu", "Ll", "Lt", "Lm", "Lo", "M",  "Mn", "Mc", "Me", "N",  "Nd",
                                       "Nl", "No", "P",  "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S",  "Sm",
                                       "Sc", "Sk", "So", "Z",  "Zs", "Zl", "Zp", "C",  "Cc", "Cf", "Co", "Cn"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

std::string compute_newer_members(std::string_view category) {
  char pcre2_version[32] = {};
  if (pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, pcre2_version) < 0) return {};
  UVersionInfo pcre2_age;
  u_versionFromString(pcre2_age, pcre2_version);
  UErrorCode status = U_ZERO_ERROR;
  const std::string pattern = "[:" + std::string(category) + ":]";
  icu::UnicodeSet set(icu::UnicodeString::fromUTF8(pattern), status);
  if (U_FAILURE(status)) return {};
  std::string out;
  UChar32 run_start = -1, run_end = -1;
  auto flush = [&] {
    if (run_start < 0) return;
    char buf[40];
    if (run_start == run_end) {
      std::snprintf(buf, sizeof buf, "\\x{%X}", static_cast<unsigned>(run_start));
    } else {
      std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", static_cast<unsigned>(run_start),
                    static_cast<unsigned>(run_end));
    }
    out += buf;
    run_start = -1;
  };
  for (int32_t r = 0; r < set.getRangeCount(); ++r) {
    for (UChar32 c = set.getRangeStart(r); c <= set.getRangeEnd(r); ++c) {
      UVersionInfo age;
      u_charAge(c, age);
      if (std::memcmp(age, pcre2_age, sizeof age) > 0) {
        if (run_start >= 0 && c == run_end + 1) {
          run_end = c;
        } else {
          flush();
          run_start = run_end = c;
        }
      }
    }
  }
  flush();
  return out;
}

}  // namespace

std::string newer_category_members(std::string_view category) {
  if (!is_general_category(category)) return {};
  static std::mutex mutex;
  static std::map<std::string, std::string, std::less<>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(category); it != cache.end()) return it->second;
  return cache.emplace(std::string(category), compute_newer_members(category)).first->second;
}

std::string onig_compatible_pattern(std::string_view pattern, std::string* error) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  size_t class_start = 0;  // index just after '[' or '[^' of the open class
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      if (e == 'Q') {  // \Q...\E: literal text, copied as is
        const size_t end = pattern.find("\\E", i + 2);
        const size_t stop = end == std::string_view::npos ? pattern.size() : end + 2;
        out.append(pattern.substr(i, stop - i));
        i = stop - 1;
        continue;
      }
      if (e == 'p' && i + 2 < pattern.size() && pattern[i + 2] == '{') {
        const size_t close = pattern.find('}', i + 3);
        if (close != std::string_view::npos) {
          const std::string_view property = pattern.substr(i, close + 1 - i);  // "\p{L}"
          const std::string extra = newer_category_members(pattern.substr(i + 3, close - (i + 3)));
          if (extra.empty()) {
            out.append(property);
          } else if (in_class) {
            out.append(property).append(extra);
          } else {
            out.append("[").append(property).append(extra).append("]");
          }
          i = close;
          continue;
        }
      }
      if (e == 's') {
        if (in_class) {
          out.append(kOnigSpaceMembers);
        } else {
          out.append("[").append(kOnigSpaceMembers).append("]");
        }
      } else if (e == 'S') {
        if (in_class) {
          if (error != nullptr) *error = "\\S inside a character class is not supported";
          return {};
        }
        out.append("[^").append(kOnigSpaceMembers).append("]");
      } else {
        out.push_back(c);
        out.push_back(e);
      }
      ++i;
      continue;
    }
    out.push_back(c);
    if (!in_class && c == '[') {
      in_class = true;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
      class_start = i + 1;
    } else if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t end = pattern.find(":]", i + 2);  // POSIX class [:alpha:]
      if (end != std::string_view::npos) {
        out.append(pattern.substr(i + 1, end + 2 - (i + 1)));
        i = end + 1;
      }
    } else if (in_class && c == ']' && i != class_start) {
      in_class = false;
    }
  }
  return out;
}

}  // namespace kern::tok
