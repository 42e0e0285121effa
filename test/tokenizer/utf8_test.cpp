// UTF-8 validation, lossy decoding by maximal subparts (Unicode §3.9, what
// Rust's from_utf8_lossy and so HF's decode do) and its streaming form.
#include <catch2/catch.hpp>
#include <string>

#include "kern-run/tokenizer/byte_level.h"
#include "kern-run/tokenizer/utf8.h"

namespace {

using kern::tok::append_utf8_lossy;
using kern::tok::find_invalid_utf8;
using kern::tok::Utf8StreamDecoder;

const std::string kFffd = "\xEF\xBF\xBD";

std::string lossy(const std::string& bytes) {
  std::string out;
  append_utf8_lossy(bytes, out);
  return out;
}

}  // namespace

TEST_CASE("find_invalid_utf8 accepts well-formed text and points at the first bad byte", "[tokenizer][utf8]") {
  CHECK(find_invalid_utf8("") == 0);
  CHECK(find_invalid_utf8("abc \xE4\xB8\xAD \xF0\x9F\x98\x80") == 12);  // all valid
  CHECK(find_invalid_utf8("ab\xC0\xAF") == 2);           // overlong
  CHECK(find_invalid_utf8("a\xED\xA0\x80") == 1);        // surrogate
  CHECK(find_invalid_utf8("a\xF4\x90\x80\x80") == 1);    // above U+10FFFF
  CHECK(find_invalid_utf8("abc\xE4\xB8") == 3);          // truncated
  CHECK(find_invalid_utf8("\x80") == 0);                 // lone continuation
}

TEST_CASE("lossy decoding replaces each maximal ill-formed subpart with one U+FFFD", "[tokenizer][utf8]") {
  CHECK(lossy("plain \xE4\xB8\xAD") == "plain \xE4\xB8\xAD");
  CHECK(lossy("\xE4\xB8") == kFffd);                        // one truncated sequence
  CHECK(lossy("\xE4\xB8" "A") == kFffd + "A");
  CHECK(lossy("\xC0\xAF") == kFffd + kFffd);                // C0 is never a lead byte
  CHECK(lossy("\xED\xA0\x80") == kFffd + kFffd + kFffd);    // ED A0 breaks at the second byte
  CHECK(lossy("\xF0\x9F\x98" "x") == kFffd + "x");
  CHECK(lossy("\xF8\x88\x80\x80\x80") == kFffd + kFffd + kFffd + kFffd + kFffd);
  CHECK(lossy("\xE2\x82\xAC\xE2\x82") == "\xE2\x82\xAC" + kFffd);
}

TEST_CASE("the stream decoder holds a character split across pushes until it is complete", "[tokenizer][utf8]") {
  Utf8StreamDecoder d;
  std::string out;
  d.push("a\xF0", out);
  CHECK(out == "a");
  CHECK(d.pending_size() == 1);
  d.push("\x9F", out);
  d.push("\x98", out);
  CHECK(out == "a");
  CHECK(d.pending_size() == 3);
  d.push("\x80" "b", out);
  CHECK(out == "a\xF0\x9F\x98\x80" "b");
  CHECK(d.pending_size() == 0);
}

TEST_CASE("the stream decoder emits U+FFFD as soon as a held sequence breaks, and at finish", "[tokenizer][utf8]") {
  Utf8StreamDecoder d;
  std::string out;
  d.push("\xE4\xB8", out);
  CHECK(out.empty());
  d.push("\xE4", out);  // a new lead byte breaks the held E4 B8
  CHECK(out == kFffd);
  d.push("\xB8", out);
  CHECK(out == kFffd);
  d.finish(out);
  CHECK(out == kFffd + kFffd);
  CHECK(d.pending_size() == 0);
}

TEST_CASE("streaming any split of a byte string gives the same text as decoding it whole", "[tokenizer][utf8]") {
  const std::string bytes = "x\xE4\xB8\xAD\xE4\xB8\xF0\x9F\x98\x80\xC0\xAF\xED\xA0\x80\xF4\x8F\xBF\xBF\xE0\xA0";
  for (size_t cut1 = 0; cut1 <= bytes.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= bytes.size(); ++cut2) {
      Utf8StreamDecoder d;
      std::string out;
      d.push(bytes.substr(0, cut1), out);
      d.push(bytes.substr(cut1, cut2 - cut1), out);
      d.push(bytes.substr(cut2), out);
      d.finish(out);
      INFO("cuts at " << cut1 << " and " << cut2);
      REQUIRE(out == lossy(bytes));
    }
  }
}

TEST_CASE("the byte-level alphabet maps all 256 bytes to distinct characters and back", "[tokenizer][byte_level]") {
  CHECK(kern::tok::byte_to_char(' ') == U'\u0120');   // 'Ġ'
  CHECK(kern::tok::byte_to_char('\n') == U'\u010A');  // 'Ċ'
  CHECK(kern::tok::byte_to_char('A') == U'A');
  CHECK(kern::tok::byte_to_char(0xAD) == U'\u0143');  // the last remapped byte
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const auto back = kern::tok::byte_level_to_bytes(kern::tok::bytes_to_byte_level(all));
  REQUIRE(back.has_value());
  CHECK(*back == all);
  CHECK_FALSE(kern::tok::byte_level_to_bytes("\xE2\x98\x83").has_value());  // U+2603 is not in the alphabet
  CHECK_FALSE(kern::tok::byte_level_to_bytes(" ").has_value());             // a raw space is not either
}
