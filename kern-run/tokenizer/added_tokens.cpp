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
  trie_.emplace_back();  // the root
  for (uint32_t i = 0; i < patterns_.size(); ++i) {
    const std::string& text = patterns_[i].text;
    if (text.empty()) continue;  // matches nothing
    uint32_t node = 0;
    for (char c : text) {
      const auto byte = static_cast<uint8_t>(c);
      uint32_t next = child(node, byte);
      if (next == 0) {
        next = static_cast<uint32_t>(trie_.size());
        Node n;
        n.byte = byte;
        if (node == 0) {
          root_child_[byte] = next;
        } else {
          n.next_sibling = trie_[node].first_child;
          trie_[node].first_child = next;
        }
        trie_.push_back(n);
      }
      node = next;
    }
    if (trie_[node].pattern < 0) trie_[node].pattern = static_cast<int32_t>(i);  // the first of equal texts wins
  }
}

uint32_t AddedTokenMatcher::child(uint32_t node, uint8_t byte) const {
  if (node == 0) return root_child_[byte];
  for (uint32_t c = trie_[node].first_child; c != 0; c = trie_[c].next_sibling) {
    ++steps_;
    if (trie_[c].byte == byte) return c;
  }
  return 0;
}

void AddedTokenMatcher::find_matches(std::string_view text, std::vector<TextSplit>& out) const {
  size_t start_offset = 0;  // end of the previous accepted split
  size_t pos = 0;           // where the scan for the next match resumes
  const size_t n = text.size();
  while (pos < n) {
    // The longest pattern starting at pos: walk the trie along the text.
    const Pattern* hit = nullptr;
    uint32_t node = 0;
    for (size_t i = pos; i < n; ++i) {
      ++steps_;
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node == 0) break;
      if (trie_[node].pattern >= 0) hit = &patterns_[static_cast<size_t>(trie_[node].pattern)];
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
    // A match inside the previous one's rstrip run is left empty by lstrip
    // (start is at least start_offset); HF's PreTokenizedString::split drops
    // empty splits, token and all: " " with lstrip and rstrip encodes
    // "x  a  y" as x, "  ", a, "  ", y.
    if (start >= stop) continue;
    if (start_offset < start) out.push_back(TextSplit{start_offset, start, -1});
    out.push_back(TextSplit{start, stop, token.id});
    start_offset = stop;
  }
  if (start_offset < n) out.push_back(TextSplit{start_offset, n, -1});
}

}  // namespace kern::tok
