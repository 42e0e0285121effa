// Added-token matching with HF's flags (see added_tokens.h).
#include "kern-run/tokenizer/added_tokens.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cstring>

namespace kern::tok {

bool is_word_char(char32_t c) {
  const UChar32 u = static_cast<UChar32>(c);
  return u_hasBinaryProperty(u, UCHAR_ALPHABETIC) ||
         (U_GET_GC_MASK(u) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0 ||
         u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL);
}

bool is_white_space(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

namespace {

const uint8_t* bytes_of(std::string_view s) { return reinterpret_cast<const uint8_t*>(s.data()); }

/// The last character of `s` (valid UTF-8), or -1 when empty.
UChar32 last_char(std::string_view s) {
  if (s.empty()) return -1;
  int32_t i = static_cast<int32_t>(s.size());
  UChar32 c;
  U8_PREV(bytes_of(s), 0, i, c);
  return c;
}

UChar32 first_char(std::string_view s) {
  if (s.empty()) return -1;
  int32_t i = 0;
  UChar32 c;
  U8_NEXT(bytes_of(s), i, static_cast<int32_t>(s.size()), c);
  return c;
}

/// Start of the run of white space that ends `s` (s.size() when none).
size_t trailing_space_start(std::string_view s) {
  int32_t i = static_cast<int32_t>(s.size());
  while (i > 0) {
    int32_t j = i;
    UChar32 c;
    U8_PREV(bytes_of(s), 0, j, c);
    if (c < 0 || !is_white_space(c)) break;
    i = j;
  }
  return static_cast<size_t>(i);
}

/// Length of the run of white space that starts `s`.
size_t leading_space_end(std::string_view s) {
  int32_t i = 0;
  const int32_t n = static_cast<int32_t>(s.size());
  while (i < n) {
    int32_t j = i;
    UChar32 c;
    U8_NEXT(bytes_of(s), j, n, c);
    if (c < 0 || !is_white_space(c)) break;
    i = j;
  }
  return static_cast<size_t>(i);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<Pattern> patterns) : patterns_(std::move(patterns)) {
  for (uint32_t i = 0; i < patterns_.size(); ++i) {
    if (patterns_[i].text.empty()) continue;  // matches nothing
    by_first_byte_[static_cast<uint8_t>(patterns_[i].text[0])].push_back(i);
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return patterns_[a].text.size() > patterns_[b].text.size();
    });
  }
}

void AddedTokenMatcher::find_matches(std::string_view text, std::vector<TextSplit>& out) const {
  size_t start_offset = 0;  // end of the previous accepted split
  size_t pos = 0;           // where the scan for the next match resumes
  const size_t n = text.size();
  while (pos < n) {
    const auto& candidates = by_first_byte_[static_cast<uint8_t>(text[pos])];
    const Pattern* hit = nullptr;
    for (uint32_t index : candidates) {
      const std::string& p = patterns_[index].text;
      if (p.size() <= n - pos && std::memcmp(text.data() + pos, p.data(), p.size()) == 0) {
        hit = &patterns_[index];
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t start = pos;
    size_t stop = pos + hit->text.size();
    pos = stop;  // the scan resumes after the raw match, as HF's find_iter does
    const AddedToken& token = hit->token;
    if (token.single_word) {
      const UChar32 before = last_char(text.substr(0, start));
      const UChar32 after = first_char(text.substr(stop));
      const bool start_space = start == 0 || before < 0 || !is_word_char(before);
      const bool stop_space = stop == n || after < 0 || !is_word_char(after);
      if (!start_space || !stop_space) continue;
    }
    if (token.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), start_offset);
    if (token.rstrip) stop += leading_space_end(text.substr(stop));
    if (start_offset < start) out.push_back(TextSplit{start_offset, start, -1});
    out.push_back(TextSplit{start, stop, token.id});
    start_offset = stop;
  }
  if (start_offset < n) out.push_back(TextSplit{start_offset, n, -1});
}

}  // namespace kern::tok
