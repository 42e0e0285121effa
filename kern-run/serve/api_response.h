// The response bodies of kern-run serve's generation endpoints, in OpenAI's
// shapes: chat.completion / text_completion objects, and the streaming
// chunks (chat.completion.chunk; text_completion for completions) sent as
// SSE `data:` lines.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kern-run/serve/api_request.h"

namespace kern::run::serve {

/// Token counts of one request.
struct Usage {
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  /// Prompt tokens mapped from the prefix cache (OpenAI's
  /// usage.prompt_tokens_details.cached_tokens; 0 on a miss).
  uint64_t cached_tokens = 0;
};

/// What every object of one response shares.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;  ///< "chatcmpl-…" or "cmpl-…", the same in every chunk
  int64_t created = 0;  ///< Unix seconds
  std::string model;
};

/// A fresh response id for `endpoint` (random hex after the prefix).
std::string new_response_id(Endpoint endpoint);

/// The non-streaming body: one choice with `content` (and, when not empty,
/// `reasoning`), `finish_reason` ("stop" or "length"), and usage.
std::string completion_json(const ResponseMeta& m, const std::string& content, const std::string& reasoning,
                            const std::string& finish_reason, const Usage& usage);

/// One streaming chunk's JSON: a choice whose delta has `role` (the first
/// chunk of a chat), `content` and/or `reasoning` (omitted when absent), and
/// `finish_reason` (null when absent). `usage_null`: add "usage": null
/// (chunks before the usage chunk when include_usage is on, as OpenAI does).
std::string chunk_json(const ResponseMeta& m, bool role, const std::optional<std::string>& content,
                       const std::optional<std::string>& reasoning, const std::optional<std::string>& finish_reason,
                       bool usage_null);

/// The final usage chunk of include_usage: "choices": [] and usage.
std::string usage_chunk_json(const ResponseMeta& m, const Usage& usage);

/// "data: <json>\n\n".
inline std::string sse(const std::string& json) { return "data: " + json + "\n\n"; }

}  // namespace kern::run::serve
