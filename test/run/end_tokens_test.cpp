// kern-run's end tokens and the chat check, from the tokenizer alone
// (kern-run/end_tokens.h): Qwen3's tokenizer gives exactly its two end
// tokens and passes the ChatML check; a tokenizer with Llama 3's special
// tokens gives its three end tokens and is refused --chat with a message.
#include <catch2/catch.hpp>

#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include "kern-run/chat_template.h"
#include "kern-run/end_tokens.h"
#include "test/engine/tiny_model.h"
#include "test/load/test_files.h"

using namespace kern;

namespace {

/// The flags fixture tokenizer with `tokens` appended to its added tokens as
/// ids 284, 285, ... (the fixture's last added token is id 283, and added
/// ids must follow on).
std::string fixture_with(const test::TempDir& dir, std::initializer_list<const char*> tokens) {
  std::ifstream in(std::string(KERN_SOURCE_ROOT) + "/test/tokenizer/fixtures/flags_tokenizer.json");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string json = ss.str();
  const size_t last = json.find("\"id\": 283,");
  REQUIRE(last != std::string::npos);
  const size_t end = json.find('}', last);  // the closing brace of token 283's object
  REQUIRE(end != std::string::npos);
  std::string added;
  int id = 284;
  for (const char* t : tokens) {
    added += ", {\"id\": " + std::to_string(id++) + ", \"content\": \"" + t +
             "\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
             "\"special\": true}";
  }
  json.insert(end + 1, added);
  const std::string path = dir.file("tokenizer.json");
  std::ofstream(path) << json;
  return path;
}

}  // namespace

TEST_CASE("a Qwen3 tokenizer's end tokens are exactly <|im_end|> and <|endoftext|>, and it passes the chat check",
          "[run][chat]") {
  auto tok = tok::Tokenizer::load(test::env_path("KERN_QWEN3_TOKENIZER_JSON"));
  if (!tok.ok()) FAIL(tok.error().message);
  CHECK(run::end_token_ids(*tok) == std::vector<int64_t>{151645, 151643});
  CHECK(run::end_token_ids(*tok) == run::qwen3_end_token_ids(*tok));
  CHECK(run::check_chat_tokens(*tok, "--chat").ok());
}

TEST_CASE("a tokenizer with Llama 3's special tokens ends at <|eot_id|>, <|eom_id|>, <|end_of_text|> (not </s>) and is "
          "refused --chat",
          "[run][chat]") {
  test::TempDir dir;
  auto tok = tok::Tokenizer::load(fixture_with(dir, {"<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>",
                                                     "<|eom_id|>", "</s>"}));
  if (!tok.ok()) FAIL(tok.error().message);
  // </s> is not an end token by name: Qwen3's vocabulary has it as plain text (id 128247).
  CHECK(run::end_token_ids(*tok) == std::vector<int64_t>{286, 287, 285});
  const Status chat = run::check_chat_tokens(*tok, "--chat");
  REQUIRE_FALSE(chat.ok());
  CHECK(chat.error().kind == ErrorKind::kUsage);
  CHECK(chat.error().message ==
        "--chat: kern renders Qwen3's chat template (ChatML with <think> blocks), and this tokenizer has no "
        "<|im_start|> token: this model's chat format is not supported; give the prompt as plain text (a "
        "completion) instead");
}

TEST_CASE("a ChatML tokenizer without <think> (Qwen2.5's) ends at <|im_end|> and <|endoftext|> and is refused --chat",
          "[run][chat]") {
  test::TempDir dir;
  auto tok = tok::Tokenizer::load(fixture_with(dir, {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}));
  if (!tok.ok()) FAIL(tok.error().message);
  CHECK(run::end_token_ids(*tok) == std::vector<int64_t>{286, 284});
  const Status chat = run::check_chat_tokens(*tok, "--chat");
  REQUIRE_FALSE(chat.ok());
  CHECK(chat.error().message.find("--chat: kern renders Qwen3's chat template (ChatML with <think> blocks), and this "
                                  "tokenizer has no <think> token") == 0);
}

TEST_CASE("the ids that end generation: the tokenizer's end tokens, then the model folder's not among them",
          "[run][chat][generation_config]") {
  test::TempDir dir;
  auto tok = tok::Tokenizer::load(fixture_with(dir, {"<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>",
                                                     "<|eom_id|>", "</s>"}));
  if (!tok.ok()) FAIL(tok.error().message);
  const std::vector<int64_t> model = {287, 2, 285, 2};
  CHECK(run::end_ids(&*tok, model) == std::vector<int64_t>{286, 287, 285, 2});
  CHECK(run::end_ids(&*tok, {}) == std::vector<int64_t>{286, 287, 285});
  CHECK(run::end_ids(nullptr, model) == std::vector<int64_t>{287, 2, 285});
  CHECK(run::end_ids(nullptr, {}).empty());
}
