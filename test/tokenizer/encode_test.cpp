// Tokenizer behaviour on the in-memory fixture (tokenizer_fixture.h): BPE
// merge order, added tokens, input errors, decode of ids without tokens, the
// streaming decoder, the \s rewrite that matches Oniguruma, and MergeTable.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "kern-run/tokenizer/added_tokens.h"
#include "kern-run/tokenizer/bpe.h"
#include "kern-run/tokenizer/pattern_compat.h"
#include "kern-run/tokenizer/split_regex.h"
#include "kern-run/tokenizer/tokenizer.h"
#include "test/tokenizer/tokenizer_fixture.h"

namespace {

using kern::tok::StreamDecoder;
using kern::tok::Tokenizer;
using kern::tok::testing::fixture_json;
using kern::tok::testing::kImStartId;
using kern::tok::testing::kToolId;
using Ids = std::vector<int32_t>;

Tokenizer fixture() {
  auto tok = Tokenizer::from_json(fixture_json(), "fixture");
  REQUIRE(tok.ok());
  return *tok;
}

Ids encode(const Tokenizer& tok, const std::string& text) {
  auto ids = tok.encode(text);
  REQUIRE(ids.ok());
  return *ids;
}

}  // namespace

TEST_CASE("bpe merges by rank within each pre-token", "[tokenizer][bpe]") {
  const Tokenizer tok = fixture();
  CHECK(encode(tok, "hello") == Ids{259});
  CHECK(encode(tok, " hello") == Ids{260});
  CHECK(encode(tok, "hell") == Ids{258});
  CHECK(encode(tok, "hel") == Ids{256, 'l'});
  // "ll" outranks nothing here: "he" (rank 0) first, then "ll", then "hell".
  CHECK(encode(tok, "helllo") == Ids{258, 'l', 'o'});
  CHECK(encode(tok, "hello hello") == Ids{259, 260});
  CHECK(encode(tok, "") == Ids{});
}

TEST_CASE("added tokens are cut out before BPE and decode back to their text", "[tokenizer][added]") {
  const Tokenizer tok = fixture();
  CHECK(encode(tok, "<|im_start|>hello<tool>") == Ids{kImStartId, 259, kToolId});
  CHECK(encode(tok, "<|im_sta") == Ids{'<', '|', 'i', 'm', '_', 's', 't', 'a'});
  CHECK(tok.decode(Ids{kImStartId, 259, kToolId}) == "<|im_start|>hello<tool>");
  CHECK(tok.decode(Ids{kImStartId, 259, kToolId}, /*skip_special_tokens=*/true) == "hello<tool>");
  CHECK(tok.is_special(kImStartId));
  CHECK_FALSE(tok.is_special(kToolId));
  CHECK(tok.token_to_id("<tool>") == kToolId);
  CHECK(tok.token_to_id("\xC4\xA0hello") == 260);
  CHECK_FALSE(tok.token_to_id("nope").has_value());
}

TEST_CASE("added-token matching costs work bounded by the text, not by the number of tokens", "[tokenizer][added]") {
  // 20,000 tokens that all start with '<' and a text with '<' everywhere:
  // the trie walk takes a few steps per position (at most the longest
  // token's length times a node's children), never one comparison per token.
  std::vector<kern::tok::AddedTokenMatcher::Pattern> patterns;
  for (int i = 0; i < 20000; ++i) {
    kern::tok::AddedToken t;
    t.id = 1000 + i;
    t.content = "<x_" + std::to_string(i) + ">";
    patterns.push_back({t.content, t});
  }
  // The longest of equal-prefix tokens wins; the first of equal texts wins.
  kern::tok::AddedToken longer;
  longer.id = 99;
  longer.content = "<x_1>>";
  patterns.push_back({longer.content, longer});
  const kern::tok::AddedTokenMatcher matcher(std::move(patterns));
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "<<y <x_" + std::to_string(i * 7) + "> <x_";
  text += "<x_1>>";
  std::vector<kern::tok::TextSplit> splits;
  matcher.find_matches(text, splits);
  CHECK(matcher.match_steps() <= 40 * text.size());
  size_t matched = 0;
  for (const auto& s : splits) matched += s.id >= 0 ? 1 : 0;
  CHECK(matched == 2001);
  REQUIRE(splits.size() >= 2);
  CHECK(splits[1].id == 1000);  // "<x_0>" in the first "<<y <x_0> <x_"
  CHECK(text.substr(splits[1].begin, splits[1].end - splits[1].begin) == "<x_0>");
  CHECK(splits.back().id == 99);
}

TEST_CASE("an added space token with lstrip and rstrip takes a whole run of spaces once, as HF does",
          "[tokenizer][added]") {
  // HF tokenizers encodes "x  a  y" as [x, "  ", a, "  ", y]: the second
  // space's match is emptied by the first one's rstrip and dropped.
  kern::tok::AddedToken space;
  space.id = 259;
  space.content = " ";
  space.lstrip = space.rstrip = true;
  const kern::tok::AddedTokenMatcher matcher({{space.content, space}});
  std::vector<kern::tok::TextSplit> splits;
  matcher.find_matches("x  a  y", splits);
  std::vector<std::string> got;
  for (const auto& s : splits) got.push_back(std::to_string(s.begin) + "-" + std::to_string(s.end) + ":" + std::to_string(s.id));
  CHECK(got == std::vector<std::string>{"0-1:-1", "1-3:259", "3-4:-1", "4-6:259", "6-7:-1"});
}

TEST_CASE("encode rejects text that is not UTF-8, naming the byte", "[tokenizer][encode]") {
  const Tokenizer tok = fixture();
  auto ids = tok.encode("hello \xC3(");
  REQUIRE_FALSE(ids.ok());
  CHECK(ids.error().kind == kern::ErrorKind::kUsage);
  CHECK(ids.error().message == "encode: text is not valid UTF-8 at byte 6");
}

TEST_CASE("encode normalizes to NFC before BPE", "[tokenizer][encode]") {
  const Tokenizer tok = fixture();
  // "e" + U+0301 composes to U+00E9, bytes C3 A9: ids 0xC3 and 0xA9 in the fixture.
  CHECK(encode(tok, "e\xCC\x81") == Ids{0xC3, 0xA9});
}

TEST_CASE("decode skips ids that have no token, as HF does", "[tokenizer][decode]") {
  const Tokenizer tok = fixture();
  CHECK(tok.decode(Ids{-5, 259, 263, 1 << 20, 'x'}) == "hellox");
  CHECK(tok.token_bytes(263).empty());
}

TEST_CASE("the stream decoder returns a character split over byte tokens only once complete", "[tokenizer][stream]") {
  const Tokenizer tok = fixture();
  StreamDecoder d(tok);
  // U+4E2D is E4 B8 AD; in the fixture each byte b is token b.
  CHECK(d.push(259) == "hello");
  CHECK(d.push(0xE4).empty());
  CHECK(d.pending_bytes() == 1);
  CHECK(d.push(0xB8).empty());
  CHECK(d.push(0xAD) == "\xE4\xB8\xAD");
  CHECK(d.pending_bytes() == 0);
  CHECK(d.push(0xE4).empty());
  CHECK(d.finish() == "\xEF\xBF\xBD");
}

TEST_CASE("the stream decoder skips special tokens when asked and unknown ids always", "[tokenizer][stream]") {
  const Tokenizer tok = fixture();
  StreamDecoder skip(tok, /*skip_special_tokens=*/true);
  CHECK(skip.push(kImStartId).empty());
  CHECK(skip.push(kToolId) == "<tool>");
  CHECK(skip.push(99999).empty());
  StreamDecoder keep(tok);
  CHECK(keep.push(kImStartId) == "<|im_start|>");
}

TEST_CASE("split patterns spell \\s as Oniguruma's whitespace set", "[tokenizer][regex]") {
  std::string error;
  CHECK(kern::tok::onig_compatible_pattern("a\\s+b", &error) == "a[\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}]+b");
  CHECK(kern::tok::onig_compatible_pattern("[^\\s\\d]", &error) == "[^\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}\\d]");
  CHECK(kern::tok::onig_compatible_pattern("(?!\\S)", &error) == "(?![^\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}])");
  CHECK(kern::tok::onig_compatible_pattern("\\\\s []\\s] \\Q\\s\\E", &error) ==
        "\\\\s []\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}] \\Q\\s\\E");
  CHECK(error.empty());
  CHECK(kern::tok::onig_compatible_pattern("[\\S]", &error).empty());
  CHECK(error == "\\S inside a character class is not supported");
}

TEST_CASE("split patterns add to \\p{X} the code points PCRE2's Unicode tables predate", "[tokenizer][regex]") {
  std::string error;
  const std::string extra = kern::tok::newer_category_members("L");
  const std::string expected_out = extra.empty() ? "a\\p{L}+" : "a[\\p{L}" + extra + "]+";
  CHECK(kern::tok::onig_compatible_pattern("a\\p{L}+", &error) == expected_out);
  CHECK(kern::tok::onig_compatible_pattern("[^\\p{L}]", &error) == "[^\\p{L}" + extra + "]");
  CHECK(kern::tok::onig_compatible_pattern("\\p{Han}", &error) == "\\p{Han}");
  CHECK(kern::tok::newer_category_members("Han").empty());
  // U+1E030 (Unicode 15.0, Lm) is a letter for Oniguruma and ICU 72; PCRE2
  // 10.42 (Unicode 14.0) alone would not match it with \p{L}.
  auto regex = kern::tok::SplitRegex::compile("\\p{L}+|[^\\p{L}]+", /*literal=*/false);
  REQUIRE(regex.ok());
  std::vector<std::string_view> pieces;
  REQUIRE(regex->split("a\xF0\x9E\x80\xB0" "b'", pieces).ok());
  CHECK(pieces == std::vector<std::string_view>{"a\xF0\x9E\x80\xB0" "b", "'"});
}

TEST_CASE("the split regex treats U+180E as a symbol, not as white space", "[tokenizer][regex]") {
  // Oniguruma (HF) has U+180E outside \s; PCRE2's own \s would include it.
  auto regex = kern::tok::SplitRegex::compile("\\s+|[^\\s]+", /*literal=*/false);
  REQUIRE(regex.ok());
  std::vector<std::string_view> pieces;
  REQUIRE(regex->split("a \xE1\xA0\x8E!", pieces).ok());
  CHECK(pieces == std::vector<std::string_view>{"a", " ", "\xE1\xA0\x8E!"});
}

TEST_CASE("merge table lookups find inserted pairs and a later insert wins", "[tokenizer][bpe]") {
  kern::tok::MergeTable t;
  for (int i = 0; i < 1000; ++i) t.insert(i, i + 1, i, 5000 + i);
  CHECK(t.size() == 1000);
  REQUIRE(t.find(10, 11) != nullptr);
  CHECK(t.find(10, 11)->rank == 10);
  CHECK(t.find(10, 11)->new_id == 5010);
  CHECK(t.find(11, 10) == nullptr);
  t.insert(10, 11, 2000, 7);
  CHECK(t.size() == 1000);
  CHECK(t.find(10, 11)->rank == 2000);
}

TEST_CASE("a run of a million spaces or tabs splits as HF does, not refused as backtracking", "[tokenizer][regex]") {
  // Qwen3's whitespace alternatives backtrack once per character of a run:
  // linear, so the match limit grows with the text (HF encodes such runs;
  // kern-run tokenize on x + 10^6 spaces/tabs + y gives HF's ids exactly).
  auto regex = kern::tok::SplitRegex::compile("\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", /*literal=*/false, "tok.json");
  REQUIRE(regex.ok());
  for (const char c : {' ', '\t'}) {
    const std::string text = "x" + std::string(1000000, c) + "y";
    std::vector<std::string_view> pieces;
    REQUIRE(regex->split(text, pieces).ok());
    REQUIRE(pieces.size() == 4);
    CHECK(pieces[0] == "x");
    CHECK(pieces[1] == std::string(999999, c));
    CHECK(pieces[2] == std::string(1, c));
    CHECK(pieces[3] == "y");
  }
}

TEST_CASE("a catastrophically backtracking split pattern is a tokenizer error naming file, pattern and byte",
          "[tokenizer][regex]") {
  auto regex = kern::tok::SplitRegex::compile("(a|aa)+$", /*literal=*/false, "tok.json: /pre_tokenizer/pattern/Regex");
  REQUIRE(regex.ok());
  std::vector<std::string_view> pieces;
  const std::string text = std::string(64, 'a') + "!";
  const kern::Status s = regex->split(text, pieces);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == kern::ErrorKind::kWeight);  // the file's fault: exit 1, not a usage error
  CHECK(s.error().message ==
        "tok.json: /pre_tokenizer/pattern/Regex: the pattern '(a|aa)+$' exceeded PCRE2's limit at byte 0 of the "
        "text (match limit exceeded): it backtracks catastrophically; fix the tokenizer's regex");
  pieces.clear();
  CHECK(regex->split("aaaa", pieces).ok());  // the same pattern on harmless text
}
