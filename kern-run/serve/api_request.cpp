// OpenAI request bodies (api_request.h).
#include "kern-run/serve/api_request.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "common/json_depth.h"

namespace kern::run::serve {
namespace {

using Value = rapidjson::Value;

std::optional<ApiError> parse_object(std::string_view body, rapidjson::Document& doc) {
  if (auto e = parse_json_bounded(body, doc))
    return bad_request(e->too_deep ? "the request body's " + e->message + " (at byte " + std::to_string(e->offset) + ")"
                                   : "invalid JSON at byte " + std::to_string(e->offset) + ": " + e->message);
  if (!doc.IsObject()) return bad_request("the request body must be a JSON object");
  return std::nullopt;
}

ApiError wrong_type(const std::string& param, const std::string& expected) {
  return bad_request("'" + param + "' must be " + expected, param);
}

/// Text of an OpenAI message content: a string, null (""), or an array of
/// {"type": "text", "text": ...} parts (concatenated).
std::optional<ApiError> content_text(const Value& v, const std::string& param, std::string& out) {
  if (v.IsNull()) return std::nullopt;
  if (v.IsString()) {
    out.assign(v.GetString(), v.GetStringLength());
    return std::nullopt;
  }
  if (!v.IsArray()) return wrong_type(param, "a string or an array of text parts");
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
    const std::string p = param + "[" + std::to_string(i) + "]";
    const Value& part = v[i];
    if (!part.IsObject() || !part.HasMember("type") || !part["type"].IsString())
      return wrong_type(p, "an object with a string 'type'");
    if (std::string_view(part["type"].GetString()) != "text")
      return bad_request("'" + p + ".type' is '" + part["type"].GetString() +
                             "': only text content parts are supported",
                         p + ".type");
    if (!part.HasMember("text") || !part["text"].IsString()) return wrong_type(p + ".text", "a string");
    out.append(part["text"].GetString(), part["text"].GetStringLength());
  }
  return std::nullopt;
}

std::optional<ApiError> parse_messages(const Value& v, std::vector<ChatMessage>& out) {
  if (!v.IsArray() || v.Empty()) return wrong_type("messages", "a non-empty array of messages");
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
    const std::string p = "messages[" + std::to_string(i) + "]";
    const Value& m = v[i];
    if (!m.IsObject()) return wrong_type(p, "an object");
    if (!m.HasMember("role") || !m["role"].IsString()) return wrong_type(p + ".role", "a string");
    ChatMessage msg;
    msg.role = m["role"].GetString();
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool")
      return bad_request("'" + p + ".role' is '" + msg.role + "': expected system, user, assistant or tool",
                         p + ".role");
    auto c = m.FindMember("content");
    if (c == m.MemberEnd()) {
      if (msg.role != "assistant") return bad_request("'" + p + ".content' is required", p + ".content");
    } else if (auto e = content_text(c->value, p + ".content", msg.content)) {
      return e;
    }
    auto tc = m.FindMember("tool_calls");
    if (tc != m.MemberEnd() && !tc->value.IsNull() && !(tc->value.IsArray() && tc->value.Empty()))
      return bad_request("'" + p + ".tool_calls' is not supported yet", p + ".tool_calls");
    auto r = m.FindMember("reasoning_content");
    if (r != m.MemberEnd() && !r->value.IsNull()) {
      if (!r->value.IsString()) return wrong_type(p + ".reasoning_content", "a string");
      msg.reasoning_content = std::string(r->value.GetString(), r->value.GetStringLength());
    }
    out.push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_int_array(const Value& v, const std::string& param, std::vector<int64_t>& out) {
  if (!v.IsArray()) return wrong_type(param, "an array of integers");
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
    if (!v[i].IsInt64()) return wrong_type(param + "[" + std::to_string(i) + "]", "an integer");
    out.push_back(v[i].GetInt64());
  }
  return std::nullopt;
}

/// The completions prompt: a string, [string], [ids] or [[ids]].
std::optional<ApiError> parse_prompt(const Value& v, GenParams& out) {
  if (v.IsString()) {
    out.prompt_text = std::string(v.GetString(), v.GetStringLength());
    return std::nullopt;
  }
  if (v.IsArray() && !v.Empty()) {
    if (v[0].IsString() || v[0].IsArray()) {
      if (v.Size() != 1) return bad_request("'prompt' with several prompts is not supported (send one per request)", "prompt");
      if (v[0].IsString()) {
        out.prompt_text = std::string(v[0].GetString(), v[0].GetStringLength());
        return std::nullopt;
      }
      return parse_int_array(v[0], "prompt[0]", out.prompt_ids);
    }
    return parse_int_array(v, "prompt", out.prompt_ids);
  }
  return wrong_type("prompt", "a string, an array of token ids, or an array of one of either");
}

/// A number in [lo, hi] ((lo, hi] when lo_open); `range` spells the interval.
std::optional<ApiError> number_in(const Value& v, const std::string& param, double lo, double hi, bool lo_open,
                                  const char* range, float& out) {
  if (!v.IsNumber()) return wrong_type(param, "a number");
  double d = v.GetDouble();
  if (!std::isfinite(d) || d < lo || d > hi || (lo_open && d == lo)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", d);
    return bad_request("'" + param + "' is " + got + ": expected a number in " + range, param);
  }
  out = static_cast<float>(d);
  return std::nullopt;
}

/// A field that asks for something kern does not do yet, unless its value
/// means "off" (null, false, 0, an empty array or object).
bool asks_for_it(const Value& v) {
  if (v.IsNull()) return false;
  if (v.IsBool()) return v.GetBool();
  if (v.IsNumber()) return v.GetDouble() != 0;
  if (v.IsArray()) return !v.Empty();
  if (v.IsObject()) return v.MemberCount() != 0;
  return true;
}

std::optional<ApiError> parse_chat_kwargs(const Value& v, ChatTemplateOptions& chat, bool* thinking_explicit) {
  if (v.IsNull()) return std::nullopt;
  if (!v.IsObject()) return wrong_type("chat_template_kwargs", "an object");
  auto t = v.FindMember("enable_thinking");
  if (t != v.MemberEnd()) {
    if (!t->value.IsBool()) return wrong_type("chat_template_kwargs.enable_thinking", "a boolean");
    chat.enable_thinking = t->value.GetBool();
    if (thinking_explicit) *thinking_explicit = true;
  }
  return std::nullopt;
}

std::optional<ApiError> parse_bool(const Value& v, const std::string& param, bool& out) {
  if (v.IsNull()) return std::nullopt;
  if (!v.IsBool()) return wrong_type(param, "a boolean");
  out = v.GetBool();
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_generation(std::string_view body, Endpoint endpoint, GenParams& out) {
  rapidjson::Document doc;
  if (auto e = parse_object(body, doc)) return e;
  out.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::kChat;
  static const std::set<std::string, std::less<>> kNotYet = {
      "logprobs", "top_logprobs", "tools", "tool_choice", "functions", "function_call", "response_format",
      "presence_penalty", "frequency_penalty", "repetition_penalty", "logit_bias", "best_of", "echo",
      "suffix", "guided_json", "guided_regex", "guided_choice", "guided_grammar"};
  bool stream_options_given = false;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string key(it->name.GetString(), it->name.GetStringLength());
    const Value& v = it->value;
    std::optional<ApiError> e;
    if (key == "model") {
      if (!v.IsString()) return wrong_type("model", "a string");
      out.model = v.GetString();
    } else if (key == "messages" && chat) {
      e = parse_messages(v, out.messages);
    } else if (key == "prompt" && !chat) {
      e = parse_prompt(v, out);
    } else if (key == "max_tokens" || key == "max_completion_tokens") {
      if (v.IsNull()) continue;
      if (!v.IsUint64() || v.GetUint64() == 0) return wrong_type(key, "a positive integer");
      out.max_tokens = v.GetUint64();
    } else if (key == "temperature") {
      if (v.IsNull()) continue;
      e = number_in(v, key, 0.0, 2.0, false, "[0, 2]", out.sampling.temperature);
    } else if (key == "top_p") {
      if (v.IsNull()) continue;
      e = number_in(v, key, 0.0, 1.0, true, "(0, 1]", out.sampling.top_p);
    } else if (key == "min_p") {
      if (v.IsNull()) continue;
      e = number_in(v, key, 0.0, 1.0, false, "[0, 1]", out.sampling.min_p);
    } else if (key == "top_k") {
      if (v.IsNull()) continue;
      if (!v.IsInt64() || v.GetInt64() < -1 || v.GetInt64() > std::numeric_limits<uint32_t>::max())
        return wrong_type(key, "an integer >= -1 (-1 or 0: off)");
      out.sampling.top_k = v.GetInt64() <= 0 ? 0 : static_cast<uint32_t>(v.GetInt64());
    } else if (key == "seed") {
      if (v.IsNull()) continue;
      if (!v.IsInt64() && !v.IsUint64()) return wrong_type(key, "an integer");
      out.sampling.seed = v.IsUint64() ? v.GetUint64() : static_cast<uint64_t>(v.GetInt64());
      out.seed_given = true;
    } else if (key == "stop") {
      if (v.IsNull()) continue;
      if (v.IsString()) {
        out.stop.emplace_back(v.GetString(), v.GetStringLength());
      } else if (v.IsArray()) {
        for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
          if (!v[i].IsString()) return wrong_type("stop[" + std::to_string(i) + "]", "a string");
          out.stop.emplace_back(v[i].GetString(), v[i].GetStringLength());
        }
      } else {
        return wrong_type(key, "a string or an array of strings");
      }
      for (size_t i = 0; i < out.stop.size(); ++i)
        if (out.stop[i].empty()) return bad_request("'stop' strings must not be empty", "stop");
    } else if (key == "stop_token_ids") {
      if (v.IsNull()) continue;
      e = parse_int_array(v, key, out.stop_token_ids);
    } else if (key == "ignore_eos") {
      e = parse_bool(v, key, out.ignore_eos);
    } else if (key == "skip_special_tokens") {
      e = parse_bool(v, key, out.skip_special_tokens);
    } else if (key == "stream") {
      e = parse_bool(v, key, out.stream);
    } else if (key == "stream_options") {
      if (v.IsNull()) continue;
      if (!v.IsObject()) return wrong_type(key, "an object");
      stream_options_given = true;
      auto u = v.FindMember("include_usage");
      if (u != v.MemberEnd()) e = parse_bool(u->value, "stream_options.include_usage", out.include_usage);
    } else if (key == "n") {
      if (v.IsNull()) continue;
      if (!v.IsInt64() || v.GetInt64() != 1)
        return bad_request("'n' must be 1: kern returns one choice per request", "n");
    } else if (key == "chat_template_kwargs" && chat) {
      e = parse_chat_kwargs(v, out.chat, &out.thinking_explicit);
    } else if (key == "add_generation_prompt" && chat) {
      e = parse_bool(v, key, out.chat.add_generation_prompt);
    } else if (kNotYet.count(key)) {
      if (asks_for_it(v)) return bad_request("'" + key + "' is not supported yet", key, "unsupported_parameter");
    } else {
      out.ignored_fields.push_back(key);
    }
    if (e) return e;
  }
  if (chat && out.messages.empty()) return bad_request("'messages' is required", "messages");
  if (!chat && !out.prompt_text && out.prompt_ids.empty()) return bad_request("'prompt' is required", "prompt");
  if (stream_options_given && !out.stream)
    return bad_request("'stream_options' is only allowed with 'stream': true", "stream_options");
  return std::nullopt;
}

std::optional<ApiError> parse_tokenize(std::string_view body, TokenizeParams& out) {
  rapidjson::Document doc;
  if (auto e = parse_object(body, doc)) return e;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string key = it->name.GetString();
    const Value& v = it->value;
    std::optional<ApiError> e;
    if (key == "model") {
      if (!v.IsString()) return wrong_type("model", "a string");
      out.model = v.GetString();
    } else if (key == "prompt") {
      if (!v.IsString()) return wrong_type("prompt", "a string");
      out.prompt = std::string(v.GetString(), v.GetStringLength());
    } else if (key == "messages") {
      e = parse_messages(v, out.messages);
    } else if (key == "add_generation_prompt") {
      e = parse_bool(v, key, out.chat.add_generation_prompt);
    } else if (key == "chat_template_kwargs") {
      e = parse_chat_kwargs(v, out.chat, nullptr);
    }
    if (e) return e;
  }
  if (out.prompt.has_value() == !out.messages.empty())
    return bad_request("give exactly one of 'prompt' and 'messages'", out.prompt ? "messages" : "prompt");
  return std::nullopt;
}

std::optional<ApiError> parse_detokenize(std::string_view body, std::string& model, std::vector<int64_t>& tokens) {
  rapidjson::Document doc;
  if (auto e = parse_object(body, doc)) return e;
  if (doc.HasMember("model")) {
    if (!doc["model"].IsString()) return wrong_type("model", "a string");
    model = doc["model"].GetString();
  }
  if (!doc.HasMember("tokens")) return bad_request("'tokens' is required", "tokens");
  return parse_int_array(doc["tokens"], "tokens", tokens);
}

}  // namespace kern::run::serve
