// OpenAI response bodies (api_response.h).
#include "kern-run/serve/api_response.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <random>

namespace kern::run::serve {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void str(Writer& w, const std::string& s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }

void head(Writer& w, const ResponseMeta& m, bool chunk) {
  w.Key("id");
  str(w, m.id);
  w.Key("object");
  if (m.endpoint == Endpoint::kChat) str(w, chunk ? "chat.completion.chunk" : "chat.completion");
  else str(w, "text_completion");
  w.Key("created");
  w.Int64(m.created);
  w.Key("model");
  str(w, m.model);
}

void usage(Writer& w, const Usage& u) {
  w.Key("usage");
  w.StartObject();
  w.Key("prompt_tokens");
  w.Uint64(u.prompt_tokens);
  w.Key("completion_tokens");
  w.Uint64(u.completion_tokens);
  w.Key("total_tokens");
  w.Uint64(u.prompt_tokens + u.completion_tokens);
  w.Key("prompt_tokens_details");
  w.StartObject();
  w.Key("cached_tokens");
  w.Uint64(u.cached_tokens);
  w.EndObject();
  w.EndObject();
}

}  // namespace

std::string new_response_id(Endpoint endpoint) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return std::string(endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + hex;
}

std::string completion_json(const ResponseMeta& m, const std::string& content, const std::string& reasoning,
                            const std::string& finish_reason, const Usage& u) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  head(w, m, false);
  w.Key("choices");
  w.StartArray();
  w.StartObject();
  w.Key("index");
  w.Int(0);
  if (m.endpoint == Endpoint::kChat) {
    w.Key("message");
    w.StartObject();
    w.Key("role");
    str(w, "assistant");
    w.Key("content");
    str(w, content);
    if (!reasoning.empty()) {
      w.Key("reasoning_content");
      str(w, reasoning);
    }
    w.EndObject();
  } else {
    w.Key("text");
    str(w, content);
  }
  w.Key("logprobs");
  w.Null();
  w.Key("finish_reason");
  str(w, finish_reason);
  w.EndObject();
  w.EndArray();
  usage(w, u);
  w.EndObject();
  return buf.GetString();
}

std::string chunk_json(const ResponseMeta& m, bool role, const std::optional<std::string>& content,
                       const std::optional<std::string>& reasoning, const std::optional<std::string>& finish_reason,
                       bool usage_null) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  head(w, m, true);
  w.Key("choices");
  w.StartArray();
  w.StartObject();
  w.Key("index");
  w.Int(0);
  if (m.endpoint == Endpoint::kChat) {
    w.Key("delta");
    w.StartObject();
    if (role) {
      w.Key("role");
      str(w, "assistant");
    }
    if (content) {
      w.Key("content");
      str(w, *content);
    }
    if (reasoning) {
      w.Key("reasoning_content");
      str(w, *reasoning);
    }
    w.EndObject();
  } else {
    w.Key("text");
    str(w, content.value_or(""));
  }
  w.Key("logprobs");
  w.Null();
  w.Key("finish_reason");
  if (finish_reason) str(w, *finish_reason);
  else w.Null();
  w.EndObject();
  w.EndArray();
  if (usage_null) {
    w.Key("usage");
    w.Null();
  }
  w.EndObject();
  return buf.GetString();
}

std::string usage_chunk_json(const ResponseMeta& m, const Usage& u) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  head(w, m, true);
  w.Key("choices");
  w.StartArray();
  w.EndArray();
  usage(w, u);
  w.EndObject();
  return buf.GetString();
}

}  // namespace kern::run::serve
