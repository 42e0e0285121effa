// Installs kern-run serve's routes on an httplib server (docs/serving.md
// lists them): the OpenAI API under /v1 (guarded by --api-key), the probes
// /health and /metrics, /tokenize and /detokenize, the chat page at /, and
// JSON error bodies for statuses httplib sets itself.
#pragma once

namespace httplib {
class Server;
}

namespace kern::run::serve {

struct ServerContext;

/// Registers every route on `svr`; `ctx` must outlive it.
void install_routes(httplib::Server& svr, ServerContext& ctx);

}  // namespace kern::run::serve
