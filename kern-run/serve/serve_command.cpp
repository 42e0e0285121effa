// `kern-run serve` (serve_command.h): wiring, signals, loading, shutdown.
#include "kern-run/serve/serve_command.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "kern-engine/request.h"
#include "kern-run/chat_template.h"
#include "kern-run/cli_errors.h"
#include "kern-run/end_tokens.h"
#include "kern-run/generation_config.h"
#include "kern-run/load_model.h"
#include "kern-run/serve/engine_worker.h"
#include "kern-run/serve/http_server.h"
#include "kern-run/serve/metrics.h"
#include "kern-run/serve/routes.h"
#include "kern-run/serve/server_context.h"
#include "kern-run/serve/serve_options.h"
#include "kern-run/serve/serve_rank.h"
#include "spdlog/spdlog.h"

namespace kern::run::serve {
namespace {

using std::chrono::milliseconds;

milliseconds ms(double seconds) { return milliseconds(static_cast<int64_t>(seconds * 1e3)); }

}  // namespace

int run_serve(int argc, char** argv) {
  ParsedServe parsed = parse_serve_command_line(argc, argv);
  if (!parsed.options) return parsed.exit_code;
  const ServeOptions& o = *parsed.options;
  spdlog::set_level(o.load.verbose ? spdlog::level::debug : spdlog::level::info);
  // Ranks 1 .. N-1 of --tp N: the engine only, driven by rank 0 (docs/parallel.md).
  if (o.load.tp_rank) return run_serve_rank(o);

  // SIGTERM and SIGINT go to the signal thread only; a client gone mid-write
  // is a write error, not SIGPIPE.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // The plan is opened before listening (the weights load afterwards, on the
  // worker's thread): its batch bound sizes the batch and the HTTP pool.
  auto opened = open_plan_for(o.plan_path, false);
  if (!opened.ok()) return fail(opened.error());
  if (Status s = engine::check_token_ids(o.load.end_ids, opened->contract.vocab, "end"); !s.ok())
    return fail(s.error().with_context(kGenerationEndIdsContext));
  const size_t plan_batch = opened->batch ? opened->batch->max_batch : 1;
  const size_t max_batch = o.max_batch.value_or(plan_batch);
  if (max_batch > plan_batch)
    return fail(make_error(ErrorKind::kUsage,
                           "--max-batch " + std::to_string(max_batch) + " exceeds the plan's max_batch " +
                               std::to_string(plan_batch) +
                               (opened->batch ? " (its 'batch' symbol's bound)"
                                              : " (it has no batched decode program decode_batch: a speculative "
                                                "plan, or a manifest generated with --max-batch 0; regenerate it "
                                                "with examples/gen_qwen3_manifest.py --max-batch N)")));
  std::optional<engine::ModelPlan> plan = std::move(*opened);

  Metrics metrics(max_batch);
  EngineWorker worker({max_batch, o.max_queue, &metrics, milliseconds(o.test_load_delay_ms),
                       milliseconds(o.test_step_delay_ms), static_cast<size_t>(o.test_gather), o.prefix_cache});
  ServerContext ctx{o, worker, metrics, nullptr, {}, 0, {}, {}, false, {}};

  HttpLimits limits;
  limits.max_body_bytes = o.max_body_bytes;
  limits.max_header_bytes = o.max_header_bytes;
  limits.max_headers = o.max_headers;
  limits.header_timeout = ms(o.header_timeout_s);
  limits.body_timeout = ms(o.body_timeout_s);
  limits.max_connections = o.max_connections;
  // Every running and waiting request may connect at once, plus probes.
  limits.backlog = static_cast<int>(std::min<size_t>(max_batch + o.max_queue + 64, 4096));
  // Streams hold a pool thread each: room for every running and waiting
  // request, /tokenize calls beside them; probes never need one.
  HttpServer svr(limits, max_batch + o.max_queue + 8);
  install_routes(svr, ctx);

  // Bound before the model loads: a port in use is an error at once.
  auto port = svr.bind(o.host, o.port);
  if (!port.ok()) return fail(port.error());
  spdlog::info("listening on http://{}:{} (model '{}' loading)", o.host, *port, o.served_model_name);

  std::atomic<int> exit_code{0};
  std::atomic<bool> exiting{false};
  worker.start(
      [&]() -> Result<std::unique_ptr<engine::Model>> {
        auto tok = tok::Tokenizer::load(o.tokenizer_path);
        if (!tok.ok()) return tok.error().with_context("--tokenizer");
        ctx.end_ids = end_ids(&*tok, o.load.end_ids);
        ctx.max_token_bytes = tok->max_token_bytes();
        ctx.tokenizer = std::make_shared<const tok::Tokenizer>(std::move(*tok));
        const uint64_t capacity = o.capacity.value_or(engine::default_capacity(plan->contract));
        KERN_ASSIGN_OR_RETURN(auto model, load_model(std::move(*plan), o.load, capacity, nullptr));
        spdlog::info("ready: model '{}' on {}, capacity {} tokens, max batch {}, max queue {}, prefix cache {}",
                     o.served_model_name, model->device_name(), model->capacity(), max_batch, o.max_queue,
                     !o.prefix_cache ? "off" : model->batch() != nullptr ? "on" : "off (the plan has no decode_batch)");
        return model;
      },
      [&](const Error& e) {
        print_error(e.message);
        exit_code = exit_code_for(e);
        svr.stop();
      });

  // SIGTERM/SIGINT: stop accepting, let running requests finish for the
  // grace period, then cancel them.
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (exiting) return;
    spdlog::info("{}: stopping (no new requests; running ones may finish for {} s)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                 o.shutdown_grace_s);
    worker.stop_accepting();
    svr.stop();
    const auto grace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(o.shutdown_grace_s));
    if (!worker.wait_idle(std::chrono::steady_clock::now() + grace)) {
      spdlog::warn("shutdown grace period over: cancelling the running requests");
      worker.abort_running();
    }
  });

  svr.run();  // returns after stop(), once every handler returned
  exiting = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);  // ends its sigwait (it sees `exiting`)
  signal_thread.join();
  if (exit_code == 0) spdlog::info("stopped");
  return exit_code;
}

}  // namespace kern::run::serve
