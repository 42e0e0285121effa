// The request bodies of POST /v1/chat/completions and /v1/completions parsed
// into what a generation needs, with OpenAI's and vLLM's field names. Every
// field a client may send is either used, refused with a 400 that names it
// (n other than 1; logprobs, tools, response_format, penalties, logit_bias
// and the like, which kern does not implement yet), or, when unknown,
// listed in `ignored_fields` for the caller to log. Checks here are local to
// the body; the model's limits (vocabulary, capacity) are checked later,
// after tokenizing (generation_job.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kern-engine/request.h"
#include "kern-run/chat_template.h"
#include "kern-run/serve/api_error.h"

namespace kern::run::serve {

/// Which endpoint a body came to.
enum class Endpoint { kChat, kCompletion };

/// One generation request as the client asked for it.
struct GenParams {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;  ///< empty: absent (the served model)
  // Chat: the history and the template's variables.
  std::vector<ChatMessage> messages;
  ChatTemplateOptions chat;
  bool thinking_explicit = false;  ///< chat_template_kwargs.enable_thinking was given
  // Completions: a text prompt, or token ids.
  std::optional<std::string> prompt_text;
  std::vector<int64_t> prompt_ids;
  std::optional<uint64_t> max_tokens;  ///< max_tokens or max_completion_tokens; >= 1
  engine::SamplingParams sampling;     ///< temperature 0 (greedy) when absent
  bool seed_given = false;
  std::vector<std::string> stop;       ///< stop strings (non-empty), matched on the text
  std::vector<int64_t> stop_token_ids;
  bool ignore_eos = false;
  bool skip_special_tokens = true;     ///< vLLM's default
  bool stream = false;
  bool include_usage = false;          ///< stream_options.include_usage
  std::vector<std::string> ignored_fields;  ///< unknown top-level fields, in order
};

/// Parses `body` (JSON) for `endpoint` into `out`. Returns the 400 to answer
/// instead: malformed JSON ("invalid JSON at byte 12: ..."), a field of the
/// wrong type or range (param names it: "messages[1].content",
/// "temperature"), a required field missing (messages, prompt), n != 1,
/// stream_options without stream, a field kern does not implement yet with
/// a value that asks for it ("'logprobs' is not supported yet").
std::optional<ApiError> parse_generation(std::string_view body, Endpoint endpoint, GenParams& out);

/// The body of POST /tokenize: a `prompt` string, or chat `messages`
/// (templated with add_generation_prompt, default true, and
/// chat_template_kwargs.enable_thinking).
struct TokenizeParams {
  std::string model;
  std::optional<std::string> prompt;
  std::vector<ChatMessage> messages;
  ChatTemplateOptions chat;
};

/// Parses a /tokenize body. Errors: as parse_generation's; neither or both
/// of prompt and messages.
std::optional<ApiError> parse_tokenize(std::string_view body, TokenizeParams& out);

/// Parses a /detokenize body: {"tokens": [ids], "model"?}. Errors: as
/// parse_generation's.
std::optional<ApiError> parse_detokenize(std::string_view body, std::string& model, std::vector<int64_t>& tokens);

}  // namespace kern::run::serve
