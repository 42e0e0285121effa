// The OpenAI request bodies kern-run serve accepts and refuses
// (kern-run/serve/api_request.h): one valid base body, one change each.
#include <catch2/catch.hpp>

#include "kern-run/serve/api_request.h"

using namespace kern::run::serve;

namespace {

std::optional<ApiError> chat(const std::string& body, GenParams& p) { return parse_generation(body, Endpoint::kChat, p); }

ApiError chat_error(const std::string& body) {
  GenParams p;
  auto e = chat(body, p);
  REQUIRE(e.has_value());
  return *e;
}

const std::string kMsgs = R"("messages": [{"role": "user", "content": "hi"}])";

}  // namespace

TEST_CASE("a chat body maps its fields to the generation", "[serve][request]") {
  GenParams p;
  auto e = chat(R"({"model": "m", "messages": [{"role": "system", "content": "s"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "reasoning_content": "r"}],
      "max_completion_tokens": 7, "temperature": 0, "top_p": 0.5, "top_k": -1, "min_p": 0.1, "seed": 42,
      "stop": ["x", "yz"], "stop_token_ids": [5], "ignore_eos": true, "stream": true,
      "stream_options": {"include_usage": true}, "n": 1, "logprobs": false, "tools": [],
      "chat_template_kwargs": {"enable_thinking": false}, "user": "u1", "store": false})",
                p);
  REQUIRE_FALSE(e.has_value());
  CHECK(p.model == "m");
  REQUIRE(p.messages.size() == 3);
  CHECK(p.messages[1].content == "ab");
  CHECK(p.messages[2].content.empty());
  CHECK(p.messages[2].reasoning_content == std::optional<std::string>("r"));
  CHECK(p.max_tokens == std::optional<uint64_t>(7));
  CHECK(p.sampling.greedy());
  CHECK(p.sampling.top_p == 0.5f);
  CHECK(p.sampling.top_k == 0);
  CHECK(p.sampling.min_p == Approx(0.1));
  CHECK(p.sampling.seed == 42);
  CHECK(p.seed_given);
  CHECK(p.stop == std::vector<std::string>{"x", "yz"});
  CHECK(p.stop_token_ids == std::vector<int64_t>{5});
  CHECK(p.ignore_eos);
  CHECK(p.stream);
  CHECK(p.include_usage);
  CHECK_FALSE(p.chat.enable_thinking);
  CHECK(p.thinking_explicit);
  CHECK(p.ignored_fields == std::vector<std::string>{"user", "store"});
}

TEST_CASE("a completions body takes a text prompt or token ids", "[serve][request]") {
  GenParams p;
  REQUIRE_FALSE(parse_generation(R"({"prompt": "hello", "max_tokens": 3, "stop": "\n"})", Endpoint::kCompletion, p));
  CHECK(p.prompt_text == std::optional<std::string>("hello"));
  CHECK(p.stop == std::vector<std::string>{"\n"});
  GenParams q;
  REQUIRE_FALSE(parse_generation(R"({"prompt": [[1, 2, 3]]})", Endpoint::kCompletion, q));
  CHECK(q.prompt_ids == std::vector<int64_t>{1, 2, 3});
  GenParams r;
  REQUIRE_FALSE(parse_generation(R"({"prompt": ["one"]})", Endpoint::kCompletion, r));
  CHECK(r.prompt_text == std::optional<std::string>("one"));
  GenParams s;
  auto e = parse_generation(R"({"prompt": ["one", "two"]})", Endpoint::kCompletion, s);
  REQUIRE(e);
  CHECK(e->param == "prompt");
  GenParams t;
  e = parse_generation(R"({"max_tokens": 3})", Endpoint::kCompletion, t);
  REQUIRE(e);
  CHECK(e->message == "'prompt' is required");
}

TEST_CASE("malformed JSON is a 400 naming the byte offset", "[serve][request]") {
  ApiError e = chat_error(R"({"messages": [}")");
  CHECK(e.status == 400);
  CHECK(e.type == "invalid_request_error");
  CHECK(e.message.rfind("invalid JSON at byte 14: ", 0) == 0);
  CHECK(chat_error("[1]").message == "the request body must be a JSON object");
}

TEST_CASE("fields of the wrong type or range are 400s naming the field", "[serve][request]") {
  struct Case {
    std::string body, param, message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"messages": []})", "messages", "'messages' must be a non-empty array of messages"},
           {R"({"messages": [{"role": "user"}]})", "messages[0].content", "'messages[0].content' is required"},
           {R"({"messages": [{"role": "bot", "content": "x"}]})", "messages[0].role",
            "'messages[0].role' is 'bot': expected system, user, assistant or tool"},
           {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0].type",
            "'messages[0].content[0].type' is 'image_url': only text content parts are supported"},
           {"{" + kMsgs + R"(, "temperature": "hot"})", "temperature", "'temperature' must be a number"},
           {"{" + kMsgs + R"(, "temperature": -1})", "temperature", "'temperature' is -1: expected a number in [0, 2]"},
           {"{" + kMsgs + R"(, "top_p": 0})", "top_p", "'top_p' is 0: expected a number in (0, 1]"},
           {"{" + kMsgs + R"(, "min_p": 1.5})", "min_p", "'min_p' is 1.5: expected a number in [0, 1]"},
           {"{" + kMsgs + R"(, "max_tokens": 0})", "max_tokens", "'max_tokens' must be a positive integer"},
           {"{" + kMsgs + R"(, "stop": [1]})", "stop[0]", "'stop[0]' must be a string"},
           {"{" + kMsgs + R"(, "stop": ""})", "stop", "'stop' strings must not be empty"},
           {"{" + kMsgs + R"(, "stream": "yes"})", "stream", "'stream' must be a boolean"},
           {"{" + kMsgs + R"(, "n": 2})", "n", "'n' must be 1: kern returns one choice per request"},
           {"{" + kMsgs + R"(, "stream_options": {"include_usage": true}})", "stream_options",
            "'stream_options' is only allowed with 'stream': true"},
       }) {
    INFO(c.body);
    ApiError e = chat_error(c.body);
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
    CHECK(e.message == c.message);
  }
  CHECK(chat_error("{}").message == "'messages' is required");
}

TEST_CASE("fields kern does not implement yet are refused by name, unless they ask for nothing", "[serve][request]") {
  for (const char* f : {R"("logprobs": true)", R"("top_logprobs": 2)", R"("tools": [{"type": "function"}])",
                        R"("tool_choice": "auto")", R"("response_format": {"type": "json_object"})",
                        R"("presence_penalty": 0.5)", R"("frequency_penalty": 1)", R"("logit_bias": {"5": 1})"}) {
    INFO(f);
    ApiError e = chat_error("{" + kMsgs + ", " + f + "}");
    std::string name = std::string(f).substr(1, std::string(f).find('"', 1) - 1);
    CHECK(e.message == "'" + name + "' is not supported yet");
    CHECK(e.param == name);
    CHECK(e.code == "unsupported_parameter");
  }
  GenParams p;
  CHECK_FALSE(chat("{" + kMsgs + R"(, "logprobs": false, "presence_penalty": 0, "tools": null, "logit_bias": {}})", p));
  ApiError tc = chat_error(R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]}]})");
  CHECK(tc.param == "messages[0].tool_calls");
}

TEST_CASE("tokenize and detokenize bodies", "[serve][request]") {
  TokenizeParams t;
  REQUIRE_FALSE(parse_tokenize(R"({"prompt": "hi"})", t));
  CHECK(t.prompt == std::optional<std::string>("hi"));
  TokenizeParams both;
  auto e = parse_tokenize(R"({"prompt": "hi", )" + kMsgs + "}", both);
  REQUIRE(e);
  CHECK(e->message == "give exactly one of 'prompt' and 'messages'");
  std::string model;
  std::vector<int64_t> ids;
  REQUIRE_FALSE(parse_detokenize(R"({"tokens": [1, 2]})", model, ids));
  CHECK(ids == std::vector<int64_t>{1, 2});
  ids.clear();
  e = parse_detokenize(R"({"tokens": [1, "x"]})", model, ids);
  REQUIRE(e);
  CHECK(e->param == "tokens[1]");
}
