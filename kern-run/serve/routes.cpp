// kern-run serve's routes besides generation: /health, /v1/models,
// /metrics, /tokenize, /detokenize, the chat page at /, and the error
// bodies of statuses httplib answers itself (404 path, 413 body).
#include "kern-run/serve/routes.h"

#include <httplib.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <ctime>

#include "kern-run/chat_template.h"
#include "kern-run/serve/api_error.h"
#include "kern-run/serve/api_request.h"
#include "kern-run/serve/chat_page.h"
#include "kern-run/serve/server_context.h"
#include "kern-run/token_tools.h"

namespace kern::run::serve {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

/// 503 unless the model is ready; true when ready.
bool ready_or_503(ServerContext& ctx, httplib::Response& res) {
  auto s = ctx.worker.state();
  if (s == EngineWorker::State::kReady) return true;
  reply_error(res, s == EngineWorker::State::kLoading
                       ? ApiError{503, "the model is loading", "service_unavailable", "", "model_loading"}
                       : ApiError{503, "the server is shutting down", "service_unavailable", "", "shutting_down"});
  return false;
}

bool model_known(ServerContext& ctx, const std::string& model, httplib::Response& res) {
  if (model.empty() || model == ctx.options.served_model_name) return true;
  reply_error(res, ApiError{404, "the model '" + model + "' does not exist (this server serves '" +
                                     ctx.options.served_model_name + "')",
                            "not_found_error", "model", "model_not_found"});
  return false;
}

void tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  TokenizeParams p;
  if (auto e = parse_tokenize(req.body, p)) return reply_error(res, *e);
  if (!model_known(ctx, p.model, res) || !ready_or_503(ctx, res)) return;
  std::string text;
  if (p.prompt) {
    text = *p.prompt;
  } else {
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
  res.set_content(buf.GetString(), "application/json");
}

void detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  std::string model;
  std::vector<int64_t> tokens;
  if (auto e = parse_detokenize(req.body, model, tokens)) return reply_error(res, *e);
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
  res.set_content(buf.GetString(), "application/json");
}

void models(ServerContext& ctx, httplib::Response& res) {
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
  res.set_content(buf.GetString(), "application/json");
}

}  // namespace

void install_routes(httplib::Server& svr, ServerContext& ctx) {
  // --api-key guards the OpenAI API (/v1/*), as vLLM does; probes stay open.
  svr.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    if (ctx.options.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + ctx.options.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    if (req.path == "/v1/chat/completions" || req.path == "/v1/completions") ctx.metrics.count_request(401);
    reply_error(res, ApiError{401, "a missing or wrong API key: send 'Authorization: Bearer KEY'",
                              "authentication_error", "", "invalid_api_key"});
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.Get("/health", [&ctx](const httplib::Request&, httplib::Response& res) {
    if (ready_or_503(ctx, res)) res.set_content("{\"status\":\"ok\"}", "application/json");
  });
  svr.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) { models(ctx, res); });
  svr.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(ctx.metrics.render(ctx.worker.gauges()), "text/plain; version=0.0.4");
  });
  svr.Post("/tokenize", [&ctx](const httplib::Request& req, httplib::Response& res) { tokenize(ctx, req, res); });
  svr.Post("/detokenize", [&ctx](const httplib::Request& req, httplib::Response& res) { detokenize(ctx, req, res); });
  svr.Post("/v1/chat/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_generation(ctx, req, res, true);
  });
  svr.Post("/v1/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_generation(ctx, req, res, false);
  });
  svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kChatPageHtml, "text/html; charset=utf-8");
  });
  // Statuses httplib sets itself (no route: 404; a body over the limit: 413;
  // a method a path does not take: 405) get the same JSON error shape.
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      reply_error(res, ApiError{404, "no route " + req.method + " " + req.path, "not_found_error", "", "not_found"});
    else if (res.status == 413)
      reply_error(res, ApiError{413, "the request body is larger than --max-body-bytes", "invalid_request_error",
                                "", "payload_too_large"});
    else
      reply_error(res, ApiError{res.status, "HTTP " + std::to_string(res.status), "invalid_request_error", "", ""});
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply_error(res, ApiError{500, what, "server_error", "", ""});
  });
}

}  // namespace kern::run::serve
