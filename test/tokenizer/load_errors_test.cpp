// Malformed tokenizer.json files give one clear error (file, JSON pointer or
// line:column, what was expected and what was found), never a crash. One
// valid base document, one change each (style.md §6).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "kern-run/tokenizer/tokenizer.h"
#include "kern-run/tokenizer/tokenizer_json.h"
#include "test/tokenizer/tokenizer_fixture.h"

namespace {

using kern::ErrorKind;
using kern::tok::Tokenizer;
using kern::tok::testing::fixture_json;
using rapidjson::Document;
using rapidjson::Value;

/// The error message of loading `json` as "tok.json"; fails if it loads.
std::string load_error(const std::string& json) {
  auto tok = Tokenizer::from_json(json, "tok.json");
  REQUIRE_FALSE(tok.ok());
  CHECK(tok.error().kind == ErrorKind::kWeight);
  return tok.error().message;
}

Value& model(Document& d) { return d["model"]; }

}  // namespace

TEST_CASE("the base fixture loads, so each error below comes from its one change", "[tokenizer][load]") {
  auto tok = Tokenizer::from_json(fixture_json(), "tok.json");
  REQUIRE(tok.ok());
  CHECK(tok->vocab_size() == 263);
}

TEST_CASE("a missing file is an io error naming the path", "[tokenizer][load]") {
  auto tok = Tokenizer::load("/nonexistent/dir/tokenizer.json");
  REQUIRE_FALSE(tok.ok());
  CHECK(tok.error().kind == ErrorKind::kIo);
  CHECK(tok.error().message == "/nonexistent/dir/tokenizer.json: cannot open: No such file or directory");
}

TEST_CASE("a directory is an io error, not an allocation failure", "[tokenizer][load]") {
  char dir_template[] = "/tmp/kern_tok_dir_XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  auto tok = Tokenizer::load(dir);
  ::rmdir(dir.c_str());
  REQUIRE_FALSE(tok.ok());
  CHECK(tok.error().kind == ErrorKind::kIo);
  CHECK(tok.error().message == dir + ": is a directory, not a file");
}

TEST_CASE("invalid JSON is reported with line and column", "[tokenizer][load]") {
  CHECK(load_error("{\n  \"model\": {,\n}") ==
        "tok.json:2:13: invalid JSON: Missing a name for object member.");
  CHECK(load_error("{} trailing") == "tok.json:1:4: invalid JSON: The document root must not be followed by other values.");
  CHECK(load_error("") == "tok.json:1:1: invalid JSON: The document is empty.");
  CHECK(load_error(std::string("{\"a\": \"x\0y\"}", 12)) == "tok.json:1:9: invalid JSON: NUL byte");
  CHECK(load_error("{\"a\": \"\xff\"}") == "tok.json:1:8: invalid JSON: Invalid encoding in string.");
}

TEST_CASE("a top level that is not an object is rejected", "[tokenizer][load]") {
  CHECK(load_error("[1, 2]") == "tok.json: (root): expected an object, found array");
}

TEST_CASE("the model section is required and must be BPE", "[tokenizer][load]") {
  CHECK(load_error(fixture_json([](Document& d) { d.RemoveMember("model"); })) ==
        "tok.json: (root): missing member \"model\"");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["type"].SetString("WordPiece"); })) ==
        "tok.json: /model/type: expected \"BPE\" (the only supported model), found string \"WordPiece\"");
}

TEST_CASE("BPE features this library does not implement are rejected by name", "[tokenizer][load]") {
  CHECK(load_error(fixture_json([](Document& d) { model(d)["dropout"].SetDouble(0.1); })) ==
        "tok.json: /model/dropout: BPE dropout is not supported: expected null, false or \"\", found number");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["unk_token"].SetString("<unk>"); })) ==
        "tok.json: /model/unk_token: an unknown token is not supported: expected null, false or \"\", "
        "found string \"<unk>\"");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["byte_fallback"].SetBool(true); })) ==
        "tok.json: /model/byte_fallback: byte_fallback is not supported: expected null, false or \"\", found true");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["ignore_merges"].SetBool(true); })) ==
        "tok.json: /model/ignore_merges: ignore_merges is not supported: expected null, false or \"\", found true");
}

TEST_CASE("vocabulary entries must be unique ids in range", "[tokenizer][load]") {
  CHECK(load_error(fixture_json([](Document& d) { model(d)["vocab"]["he"].SetString("256"); })) ==
        "tok.json: /model/vocab/he: expected a token id (an integer in 0..16777215), found string \"256\"");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["vocab"]["he"].SetInt(-1); })) ==
        "tok.json: /model/vocab/he: expected a token id (an integer in 0..16777215), found number");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["vocab"]["he"].SetInt64(4000000000); })) ==
        "tok.json: /model/vocab/he: expected a token id (an integer in 0..16777215), found number");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["vocab"]["ll"].SetInt(256); })) ==
        "tok.json: /model/vocab/ll: id 256 is already used by \"he\"");
  CHECK(load_error(fixture_json([](Document& d) {
          model(d)["vocab"].AddMember("a/b~c", 300, d.GetAllocator());
          model(d)["vocab"].AddMember("a/b~c", 301, d.GetAllocator());
        })) == "tok.json: /model/vocab/a~1b~0c: duplicate vocabulary entry");
}

TEST_CASE("a vocabulary without all 256 byte symbols is rejected", "[tokenizer][load]") {
  CHECK(load_error(fixture_json([](Document& d) { model(d)["vocab"].RemoveMember("A"); })) ==
        "tok.json: /model/vocab: byte-level symbol \"A\" for byte 0x41 is missing (byte-level BPE needs all 256)");
}

TEST_CASE("merges must name vocabulary tokens whose concatenation is a token", "[tokenizer][load]") {
  CHECK(load_error(fixture_json([](Document& d) { model(d)["merges"][1].SetString("l q"); })) ==
        "tok.json: /model/merges/1: token \"lq\" is not in the vocabulary");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["merges"][1].SetString("lx l"); })) ==
        "tok.json: /model/merges/1: token \"lx\" is not in the vocabulary");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["merges"][2].SetString("hell"); })) ==
        "tok.json: /model/merges/2: expected \"left right\" (two tokens separated by one space), found string \"hell\"");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["merges"][0].SetInt(3); })) ==
        "tok.json: /model/merges/0: expected \"left right\" or [\"left\", \"right\"], found number");
  CHECK(load_error(fixture_json([](Document& d) { model(d)["merges"].SetObject(); })) ==
        "tok.json: /model/merges: expected an array, found object");
}

TEST_CASE("merges may also be written as pairs", "[tokenizer][load]") {
  auto tok = Tokenizer::from_json(fixture_json([](Document& d) {
                                    Value pair(rapidjson::kArrayType);
                                    pair.PushBack("h", d.GetAllocator()).PushBack("e", d.GetAllocator());
                                    model(d)["merges"][0] = pair;
                                  }),
                                  "tok.json");
  REQUIRE(tok.ok());
  auto ids = tok->encode("hello");
  REQUIRE(ids.ok());
  CHECK(*ids == std::vector<int32_t>{259});
}

TEST_CASE("added tokens need content and the id HF tokenizers would give them", "[tokenizer][load]") {
  CHECK(load_error(fixture_json([](Document& d) { d["added_tokens"][0].RemoveMember("content"); })) ==
        "tok.json: /added_tokens/0: missing member \"content\"");
  CHECK(load_error(fixture_json([](Document& d) { d["added_tokens"][0]["content"].SetString(""); })) ==
        "tok.json: /added_tokens/0/content: expected a non-empty string, found string \"\"");
  CHECK(load_error(fixture_json([](Document& d) { d["added_tokens"][1]["id"].SetInt(270); })) ==
        "tok.json: /added_tokens/1/id: expected 262 (the id HF tokenizers assigns to \"<tool>\"), found 270");
  CHECK(load_error(fixture_json([](Document& d) { d["added_tokens"][1]["lstrip"].SetString("yes"); })) ==
        "tok.json: /added_tokens/1/lstrip: expected true or false, found string \"yes\"");
  CHECK(load_error(fixture_json([](Document& d) { d["added_tokens"][1]["content"].SetString("<|im_start|>"); })) ==
        "tok.json: /added_tokens/1: duplicate added token \"<|im_start|>\"");
}

TEST_CASE("loading many added tokens costs work linear in their number", "[tokenizer][load]") {
  // 20,000 more added tokens: the duplicate check compares about one string
  // per token (a hash set), never each with every earlier one (2 x 10^8).
  constexpr int kMore = 20000;
  const std::string json = fixture_json([](Document& d) {
    auto& list = d["added_tokens"];
    int next = 0;
    for (const auto& t : list.GetArray()) next = std::max(next, t["id"].GetInt() + 1);
    for (int i = 0; i < kMore; ++i) {
      Value t(rapidjson::kObjectType);
      t.AddMember("id", next + i, d.GetAllocator());
      t.AddMember("content", Value(("<extra_" + std::to_string(i) + ">").c_str(), d.GetAllocator()), d.GetAllocator());
      for (const char* flag : {"single_word", "lstrip", "rstrip", "normalized"}) {
        t.AddMember(rapidjson::StringRef(flag), false, d.GetAllocator());
      }
      t.AddMember("special", true, d.GetAllocator());
      list.PushBack(t, d.GetAllocator());
    }
  });
  auto model = kern::tok::parse_tokenizer_json(json, "tok.json");
  REQUIRE(model.ok());
  CHECK((*model)->added_tokens.size() > kMore);
  CHECK((*model)->load_comparisons <= 2 * (*model)->added_tokens.size());
  auto tok = Tokenizer::from_json(json, "tok.json");
  REQUIRE(tok.ok());
  const auto id = tok->token_to_id("<extra_12345>");
  REQUIRE(id.has_value());
  auto ids = tok->encode("a<extra_12345>b");
  REQUIRE(ids.ok());
  CHECK(ids->size() == 3);
  CHECK((*ids)[1] == *id);
}

TEST_CASE("an added token whose content is in the vocabulary takes the vocabulary id", "[tokenizer][load]") {
  auto tok = Tokenizer::from_json(fixture_json([](Document& d) {
                                    d["added_tokens"][1]["content"].SetString("hello");
                                    d["added_tokens"][1]["id"].SetInt(259);
                                  }),
                                  "tok.json");
  REQUIRE(tok.ok());
  CHECK(tok->token_to_id("hello") == 259);
}

TEST_CASE("unsupported pipeline steps are rejected by name", "[tokenizer][load]") {
  CHECK(load_error(fixture_json([](Document& d) { d["normalizer"]["type"].SetString("NFKC"); })) ==
        "tok.json: /normalizer/type: unsupported normalizer \"NFKC\" (supported: \"NFC\" or null)");
  CHECK(load_error(fixture_json([](Document& d) { d["pre_tokenizer"]["type"].SetString("Whitespace"); })) ==
        "tok.json: /pre_tokenizer/type: unsupported pre-tokenizer \"Whitespace\" (supported: Sequence, Split, ByteLevel)");
  CHECK(load_error(fixture_json([](Document& d) { d["pre_tokenizer"].SetNull(); })) ==
        "tok.json: /pre_tokenizer: a ByteLevel pre-tokenizer is required (this library implements byte-level BPE only)");
  CHECK(load_error(fixture_json([](Document& d) {
          d["pre_tokenizer"]["pretokenizers"][0]["behavior"].SetString("Removed");
        })) == "tok.json: /pre_tokenizer/pretokenizers/0/behavior: expected \"Isolated\" (the only supported split "
               "behavior), found string \"Removed\"");
  CHECK(load_error(fixture_json([](Document& d) {
          d["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"].SetBool(true);
        })) == "tok.json: /pre_tokenizer/pretokenizers/1/add_prefix_space: add_prefix_space is not supported: "
               "expected null, false or \"\", found true");
  CHECK(load_error(fixture_json([](Document& d) {
          auto& steps = d["pre_tokenizer"]["pretokenizers"];
          Value first(steps[0], d.GetAllocator());
          steps[0] = steps[1];
          steps[1] = first;
        })) == "tok.json: /pre_tokenizer/pretokenizers/1: ByteLevel must be the last pre-tokenizer step, "
               "found \"Split\" after it");
  CHECK(load_error(fixture_json([](Document& d) { d["decoder"]["type"].SetString("WordPiece"); })) ==
        "tok.json: /decoder/type: unsupported decoder \"WordPiece\" (supported: \"ByteLevel\")");
  CHECK(load_error(fixture_json([](Document& d) { d["post_processor"]["type"].SetString("TemplateProcessing"); })) ==
        "tok.json: /post_processor/type: unsupported post-processor \"TemplateProcessing\" (supported: "
        "\"ByteLevel\" or null)");
  CHECK(load_error(fixture_json([](Document& d) { d["truncation"].SetObject(); })) ==
        "tok.json: /truncation: expected null (truncation and padding are not supported), found object");
  CHECK(load_error(fixture_json([](Document& d) { d["decoder"].SetInt(1); })) ==
        "tok.json: /decoder: expected an object with a \"type\", found number");
}

TEST_CASE("an invalid split regex is reported with PCRE2's message and offset", "[tokenizer][load]") {
  CHECK(load_error(fixture_json([](Document& d) {
          d["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].SetString("(ab");
        })) == "tok.json: /pre_tokenizer/pretokenizers/0/pattern/Regex: invalid regex: missing closing "
               "parenthesis at offset 3");
  CHECK(load_error(fixture_json([](Document& d) {
          d["pre_tokenizer"]["pretokenizers"][0]["pattern"].SetString("x");
        })) == "tok.json: /pre_tokenizer/pretokenizers/0/pattern: expected {\"Regex\": ...} or {\"String\": ...}, "
               "found string \"x\"");
}

TEST_CASE("a tokenizer.json nested a million deep is an error naming the depth, not a stack overflow",
          "[tokenizer][load]") {
  const std::string deep = "{\"model\":\n" + std::string(1000000, '{') + std::string(1000000, '}') + "}";
  CHECK(load_error(deep) == "tok.json:2:128: arrays/objects nest deeper than 128 levels");
}

TEST_CASE("a FIFO or /dev/zero as the tokenizer is refused at once", "[tokenizer][load]") {
  char dir_template[] = "/tmp/kern_tok_fifo_XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string fifo = std::string(dir_template) + "/tokenizer.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto tok = Tokenizer::load(fifo);  // would block in open() without O_NONBLOCK
  ::unlink(fifo.c_str());
  ::rmdir(dir_template);
  REQUIRE_FALSE(tok.ok());
  CHECK(tok.error().kind == ErrorKind::kIo);
  CHECK(tok.error().message == fifo + ": is a FIFO, not a regular file");
  auto zero = Tokenizer::load("/dev/zero");  // used to end in std::bad_alloc
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().message == "/dev/zero: is a character device, not a regular file");
}

namespace {

/// The fixture with `escape` written (as JSON text) inside the "<tool>" added token's content.
std::string with_escape_in_content(const std::string& escape) {
  std::string json = fixture_json();
  const std::string at = "\"content\": \"<tool>\"";
  const size_t i = json.find(at);
  REQUIRE(i != std::string::npos);
  return json.replace(i, at.size(), "\"content\": \"<tool" + escape + ">\"");
}

/// line:column of the first `needle` in `text` (1-based, bytes).
std::string position_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  const size_t line_start = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
  return std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n')) + ":" +
         std::to_string(at - line_start + 1);
}

}  // namespace

// Issue 22: a lone surrogate escape in tokenizer.json is a clear error with
// its line:column (HF's serde_json refuses both halves), never CESU-8 bytes
// in a token or a crash.
TEST_CASE("a lone surrogate escape in tokenizer.json is an error at its line and column", "[tokenizer][load]") {
  const std::string low = with_escape_in_content("\\udc00");
  CHECK(load_error(low) == "tok.json:" + position_of(low, "\\udc00") +
                               ": invalid JSON: lone low surrogate \\udc00 (a \\udc00-\\udfff escape must follow a "
                               "\\ud800-\\udbff one)");
  const std::string low_in_vocab = [] {
    std::string json = fixture_json();
    const size_t i = json.find("\"he\": 256");
    return json.replace(i, 4, "\"h\\uDFFF\"");
  }();
  CHECK(load_error(low_in_vocab) == "tok.json:" + position_of(low_in_vocab, "\\uDFFF") +
                                        ": invalid JSON: lone low surrogate \\uDFFF (a \\udc00-\\udfff escape must "
                                        "follow a \\ud800-\\udbff one)");
  const std::string high = with_escape_in_content("\\ud800");
  const std::string high_error = load_error(high);
  CHECK(high_error.rfind("tok.json:" + position_of(high, "\\ud800").substr(0, position_of(high, "\\ud800").find(':')) +
                             ":", 0) == 0);
  CHECK_THAT(high_error, Catch::Matchers::EndsWith(": invalid JSON: The surrogate pair in string is invalid."));
  // A valid pair, an escaped backslash before "udc00", and \u00e9 still load.
  for (const char* ok : {"\\ud83d\\ude00", "\\\\udc00", "\\u00e9"}) {
    INFO(ok);
    CHECK(Tokenizer::from_json(with_escape_in_content(ok), "tok.json").ok());
  }
}
