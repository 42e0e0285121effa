// What kern-run serve's HTTP handlers share: the options, the engine worker,
// the metrics, and the tokenizer (published by the loader before the worker
// reports kReady; immutable afterwards and safe to use from every thread).
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kern-run/serve/api_error.h"
#include "kern-run/serve/engine_worker.h"
#include "kern-run/serve/metrics.h"
#include "kern-run/serve/serve_options.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace kern::run::serve {

struct ServerContext {
  const ServeOptions& options;
  EngineWorker& worker;
  Metrics& metrics;
  /// Set by the loader (worker thread) before the worker is kReady.
  std::shared_ptr<const tok::Tokenizer> tokenizer;
  std::vector<int64_t> end_ids;  ///< the tokenizer's end tokens (qwen3_end_token_ids)
  /// Unknown request fields already logged (each is logged once).
  std::mutex logged_mutex;
  std::set<std::string> logged_fields;
};

/// POST /v1/chat/completions (`chat`) or /v1/completions: parse, template,
/// tokenize, check against the model, submit, then answer with the whole
/// response or stream it as SSE. Errors: api_error.h's shape and statuses.
void handle_generation(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat);

/// Writes `e` as the response (status and JSON body).
void reply_error(httplib::Response& res, const ApiError& e);

}  // namespace kern::run::serve
