// Qwen3's chat template for one turn, compared with the strings HF's
// apply_chat_template renders from Qwen3's tokenizer_config.json (the
// template's text is quoted in the expected values).
#include <catch2/catch.hpp>

#include "kern-run/chat_template.h"
#include "kern-run/prompt_input.h"
#include "test/engine/tiny_model.h"

using namespace kern;

TEST_CASE("the chat template wraps a user turn and opens the assistant's turn", "[run][chat]") {
  CHECK(run::render_qwen3_chat({std::nullopt, "Hi there", false}) ==
        "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("the chat template puts a system turn first when one is given", "[run][chat]") {
  CHECK(run::render_qwen3_chat({std::string("Be brief."), "Why?", false}) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n");
  // An empty system prompt is still a turn, as in the template.
  CHECK(run::render_qwen3_chat({std::string(), "x", false}) ==
        "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("the chat template appends an empty think block when thinking is off", "[run][chat]") {
  CHECK(run::render_qwen3_chat({std::nullopt, "2+2?", true}) ==
        "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST_CASE("the multi-turn template drops an earlier assistant turn's think content", "[run][chat]") {
  std::vector<run::ChatMessage> m = {{"user", "a", std::nullopt},
                                     {"assistant", "<think>\nr\n</think>\n\nb", std::nullopt},
                                     {"user", "c", std::nullopt}};
  auto out = run::render_qwen3_messages(m, {});
  REQUIRE(out.ok());
  CHECK(*out ==
        "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n"
        "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n");
}

// Issue 39: with stable_history every earlier reply renders as its
// generation prompt and reply were, so the conversation resent with one more
// turn starts with the text the model generated from.
TEST_CASE("stable_history keeps each earlier reply's think block: the history is a prefix of the next prompt",
          "[run][chat][prefix]") {
  for (const bool thinking : {false, true}) {
    INFO("enable_thinking " << thinking);
    run::ChatTemplateOptions o;
    o.enable_thinking = thinking;
    o.stable_history = true;
    std::vector<run::ChatMessage> m = {{"user", "Hi", std::nullopt}};
    auto first = run::render_qwen3_messages(m, o);
    REQUIRE(first.ok());
    // What the model generated after the generation prompt, and what a client sends back.
    const std::string generated = thinking ? "<think>\nSay hello.\n</think>\n\nHello!" : "Hello!";
    m.push_back({"assistant", "Hello!", thinking ? std::optional<std::string>("Say hello.") : std::nullopt});
    m.push_back({"user", "Again", std::nullopt});
    auto second = run::render_qwen3_messages(m, o);
    REQUIRE(second.ok());
    CHECK(second->rfind(*first + generated + "<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n", 0) == 0);
    // The template's own rule drops the earlier reply's think block: not a prefix.
    o.stable_history = false;
    auto own = run::render_qwen3_messages(m, o);
    REQUIRE(own.ok());
    CHECK(own->rfind(*first + generated, 0) != 0);
  }
}

TEST_CASE("the multi-turn template refuses an empty history and unknown roles", "[run][chat]") {
  auto empty = run::render_qwen3_messages({}, {});
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message == "messages: at least one message is needed");
  auto bad = run::render_qwen3_messages({{"user", "a", std::nullopt}, {"developer", "b", std::nullopt}}, {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "messages[1].role: 'developer' is not one of system, user, assistant, tool");
}

TEST_CASE("the end tokens are Qwen3's <|im_end|> and <|endoftext|>", "[run][chat]") {
  auto tok = tok::Tokenizer::load(test::env_path("KERN_QWEN3_TOKENIZER_JSON"));
  if (!tok.ok()) FAIL(tok.error().message);
  CHECK(run::qwen3_end_token_ids(*tok) == std::vector<int64_t>{151645, 151643});
}

TEST_CASE("the templated chat encodes its markers as single special tokens", "[run][chat]") {
  auto tok = tok::Tokenizer::load(test::env_path("KERN_QWEN3_TOKENIZER_JSON"));
  if (!tok.ok()) FAIL(tok.error().message);
  auto ids = tok->encode(run::render_qwen3_chat({std::nullopt, "Hi", true}));
  REQUIRE(ids.ok());
  // Expected ids from HF tokenizers (the @anush008/tokenizers binding in .cache/tokenizer):
  // <|im_start|> user \n Hi <|im_end|> \n <|im_start|> assistant \n <think> \n\n </think> \n\n
  CHECK(*ids == std::vector<int32_t>{151644, 872, 198, 13048, 151645, 198, 151644, 77091, 198, 151667, 271, 151668, 271});
}

TEST_CASE("kern-run stops at the end tokens only with a tokenizer and without --ignore-eos", "[run][chat]") {
  auto tok = tok::Tokenizer::load(test::env_path("KERN_QWEN3_TOKENIZER_JSON"));
  if (!tok.ok()) FAIL(tok.error().message);
  run::RunOptions o;
  CHECK(run::stop_ids_for(o, &*tok) == std::vector<int64_t>{151645, 151643});
  CHECK(run::stop_ids_for(o, nullptr).empty());
  o.ignore_eos = true;
  CHECK(run::stop_ids_for(o, &*tok).empty());
}
