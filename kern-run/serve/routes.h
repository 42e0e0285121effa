// Installs kern-run serve's routes on the HTTP server (docs/serving.md
// lists them): the OpenAI API under /v1 (guarded by --api-key), the probes
// /health and /metrics, /tokenize and /detokenize, the chat page at /, and
// JSON error bodies for statuses the HTTP layer answers itself.
#pragma once

namespace kern::run::serve {

class HttpServer;
struct ServerContext;

/// Registers every route on `svr`; `ctx` must outlive it.
void install_routes(HttpServer& svr, ServerContext& ctx);

}  // namespace kern::run::serve
