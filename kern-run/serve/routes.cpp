// kern-run serve's routes besides generation: /health, /v1/models,
// /metrics, /tokenize, /detokenize, the chat page at /, and the error
// bodies of statuses the HTTP layer answers itself (404 path, 413 body, ...).
#include "kern-run/serve/routes.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <ctime>

#include "kern-run/chat_template.h"
#include "kern-run/end_tokens.h"
#include "kern-run/serve/api_error.h"
#include "kern-run/serve/api_request.h"
#include "kern-run/serve/chat_page.h"
#include "kern-run/serve/server_context.h"
#include "kern-run/token_tools.h"

namespace kern::run::serve {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

HttpResponse json(std::string body) {
  HttpResponse r;
  r.body = std::move(body);
  return r;
}

/// 503 unless the model is ready; true when ready.
bool ready_or_503(ServerContext& ctx, HttpExchange& res) {
  auto s = ctx.worker.state();
  if (s == EngineWorker::State::kReady) return true;
  reply_error(res, s == EngineWorker::State::kLoading
                       ? ApiError{503, "the model is loading", "service_unavailable", "", "model_loading"}
                       : ApiError{503, "the server is shutting down", "service_unavailable", "", "shutting_down"});
  return false;
}

bool model_known(ServerContext& ctx, const std::string& model, HttpExchange& res) {
  if (model.empty() || model == ctx.options.served_model_name) return true;
  reply_error(res, ApiError{404, "the model '" + model + "' does not exist (this server serves '" +
                                     ctx.options.served_model_name + "')",
                            "not_found_error", "model", "model_not_found"});
  return false;
}

void tokenize(ServerContext& ctx, HttpExchange& res) {
  TokenizeParams p;
  if (auto e = parse_tokenize(res.request().body, p)) return reply_error(res, *e);
  if (!model_known(ctx, p.model, res) || !ready_or_503(ctx, res)) return;
  std::string text;
  if (p.prompt) {
    text = *p.prompt;
  } else {
    if (Status chat = check_chat_tokens(*ctx.tokenizer, "/tokenize messages"); !chat.ok())
      return reply_error(res, bad_request(chat.error().message, "messages"));
    auto rendered = render_qwen3_messages(p.messages, p.chat);
    if (!rendered.ok()) return reply_error(res, bad_request(rendered.error().message, "messages"));
    text = std::move(*rendered);
  }
  auto ids = ctx.tokenizer->encode(text);
  if (!ids.ok()) return reply_error(res, bad_request(ids.error().message, p.prompt ? "prompt" : "messages"));
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("tokens");
  w.StartArray();
  for (int32_t id : *ids) w.Int(id);
  w.EndArray();
  w.Key("count");
  w.Uint64(ids->size());
  w.Key("max_model_len");
  w.Uint64(ctx.worker.limits().capacity);
  w.EndObject();
  res.respond(json(buf.GetString()));
}

void detokenize(ServerContext& ctx, HttpExchange& res) {
  std::string model;
  std::vector<int64_t> tokens;
  if (auto e = parse_detokenize(res.request().body, model, tokens)) return reply_error(res, *e);
  if (!model_known(ctx, model, res) || !ready_or_503(ctx, res)) return;
  auto ids = check_decodable(*ctx.tokenizer, tokens, "tokens");
  if (!ids.ok()) return reply_error(res, bad_request(ids.error().message, "tokens"));
  const std::string text = ctx.tokenizer->decode(*ids);
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("prompt");
  w.String(text.c_str(), static_cast<rapidjson::SizeType>(text.size()));
  w.EndObject();
  res.respond(json(buf.GetString()));
}

void models(ServerContext& ctx, HttpExchange& res) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("object");
  w.String("list");
  w.Key("data");
  w.StartArray();
  w.StartObject();
  w.Key("id");
  w.String(ctx.options.served_model_name.c_str());
  w.Key("object");
  w.String("model");
  w.Key("created");
  w.Int64(static_cast<int64_t>(std::time(nullptr)));
  w.Key("owned_by");
  w.String("kern");
  if (ctx.worker.state() == EngineWorker::State::kReady) {
    w.Key("max_model_len");
    w.Uint64(ctx.worker.limits().capacity);
  }
  w.EndObject();
  w.EndArray();
  w.EndObject();
  res.respond(json(buf.GetString()));
}

}  // namespace

void install_routes(HttpServer& svr, ServerContext& ctx) {
  // --api-key guards the OpenAI API (/v1/*), as vLLM does; probes stay open.
  svr.set_pre_routing([&ctx](const HttpRequest& req) -> std::optional<HttpResponse> {
    if (ctx.options.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return std::nullopt;
    if (req.header("Authorization") == "Bearer " + ctx.options.api_key) return std::nullopt;
    if (req.path == "/v1/chat/completions" || req.path == "/v1/completions") ctx.metrics.count_request(401);
    return error_response(ApiError{401, "a missing or wrong API key: send 'Authorization: Bearer KEY'",
                                   "authentication_error", "", "invalid_api_key"});
  });
  // Probes and the static page answer on the I/O threads: they never wait,
  // so they answer while every pool thread is busy (docs/serving.md).
  svr.route("GET", "/health", HandlerThread::kInline, [&ctx](HttpExchange& ex) {
    if (ready_or_503(ctx, ex)) ex.respond(json("{\"status\":\"ok\"}"));
  });
  svr.route("GET", "/v1/models", HandlerThread::kInline, [&ctx](HttpExchange& ex) { models(ctx, ex); });
  svr.route("GET", "/metrics", HandlerThread::kInline, [&ctx](HttpExchange& ex) {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = ctx.metrics.render(ctx.worker.gauges());
    ex.respond(r);
  });
  svr.route("GET", "/", HandlerThread::kInline, [](HttpExchange& ex) {
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = kChatPageHtml;
    ex.respond(r);
  });
  svr.route("POST", "/tokenize", HandlerThread::kPool, [&ctx](HttpExchange& ex) { tokenize(ctx, ex); });
  svr.route("POST", "/detokenize", HandlerThread::kPool, [&ctx](HttpExchange& ex) { detokenize(ctx, ex); });
  svr.route("POST", "/v1/chat/completions", HandlerThread::kPool,
            [&ctx](HttpExchange& ex) { handle_generation(ctx, ex, true); });
  svr.route("POST", "/v1/completions", HandlerThread::kPool,
            [&ctx](HttpExchange& ex) { handle_generation(ctx, ex, false); });
  // Statuses the HTTP layer answers itself get the same JSON error shape.
  svr.set_error_body([](int status, const std::string& message, const std::string& code) {
    const char* type = status == 503   ? "service_unavailable"
                       : status >= 500 ? "server_error"
                       : status == 404 ? "not_found_error"
                                       : "invalid_request_error";
    return error_response(ApiError{status, message, type, "", code});
  });
}

}  // namespace kern::run::serve
