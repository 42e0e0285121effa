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
#include "kern-run/serve/http_server.h"
#include "kern-run/serve/metrics.h"
#include "kern-run/serve/prompt_memo.h"
#include "kern-run/serve/serve_options.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run::serve {

struct ServerContext {
  const ServeOptions& options;
  EngineWorker& worker;
  Metrics& metrics;
  /// Set by the loader (worker thread) before the worker is kReady.
  std::shared_ptr<const tok::Tokenizer> tokenizer;
  std::vector<int64_t> end_ids;  ///< ids that end generation: the tokenizer's and the model folder's (end_ids)
  /// The longest token's bytes (tokenizer's max_token_bytes): a prompt text
  /// longer than capacity * this * kNormalizationShrink cannot fit and is
  /// refused before it is tokenized.
  size_t max_token_bytes = 0;
  /// Unknown request field names already logged (each once), at most
  /// kMaxLoggedFields of at most kMaxLoggedFieldBytes: what a client sends
  /// never grows the server's memory past its request.
  std::mutex logged_mutex;
  std::set<std::string> logged_fields;
  bool logged_fields_full = false;
  /// Finished chat turns' ids by their rendered text (prompt_memo.h).
  PromptMemo memo;
};

/// POST /v1/chat/completions (`chat`) or /v1/completions: parse, template,
/// tokenize, check against the model, submit, then answer with the whole
/// response or stream it as SSE. Errors: api_error.h's shape and statuses.
void handle_generation(ServerContext& ctx, HttpExchange& ex, bool chat);

/// A client-supplied field name as the log shows it: at most 64 bytes (cut
/// at a character boundary, its length said), control bytes and escapes
/// made visible (terminal_safe).
std::string loggable_field_name(std::string_view name);

/// `e` as a response: its status and JSON body.
HttpResponse error_response(const ApiError& e);

/// Answers with `e` (status and JSON body).
void reply_error(HttpExchange& ex, const ApiError& e);

}  // namespace kern::run::serve
