// `kern-run serve` (serve_command.h): wiring, signals, loading, shutdown.
#include "kern-run/serve/serve_command.h"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "kern-engine/request.h"
#include "kern-run/chat_template.h"
#include "kern-run/cli_errors.h"
#include "kern-run/load_model.h"
#include "kern-run/serve/engine_worker.h"
#include "kern-run/serve/metrics.h"
#include "kern-run/serve/routes.h"
#include "kern-run/serve/server_context.h"
#include "kern-run/serve/serve_options.h"
#include "spdlog/spdlog.h"

namespace kern::run::serve {
namespace {

using std::chrono::milliseconds;

/// Stops `svr` once it listens (a stop before listen_after_bind would be lost).
void stop_when_listening(httplib::Server& svr) {
  for (int i = 0; i < 500 && !svr.is_running(); ++i) std::this_thread::sleep_for(milliseconds(10));
  svr.stop();
}

}  // namespace

int run_serve(int argc, char** argv) {
  ParsedServe parsed = parse_serve_command_line(argc, argv);
  if (!parsed.options) return parsed.exit_code;
  const ServeOptions& o = *parsed.options;
  spdlog::set_level(o.load.verbose ? spdlog::level::debug : spdlog::level::info);

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
                       milliseconds(o.test_step_delay_ms), static_cast<size_t>(o.test_gather)});
  ServerContext ctx{o, worker, metrics, nullptr, {}, {}, {}};

  httplib::Server svr;
  // Streams hold a thread each: room for every running and waiting request plus probes.
  const size_t threads = max_batch + o.max_queue + 8;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(o.max_body_bytes);
  svr.set_keep_alive_timeout(5);
  install_routes(svr, ctx);

  int port = o.port;
  if (o.port == 0) {
    port = svr.bind_to_any_port(o.host);
  } else if (!svr.bind_to_port(o.host, o.port)) {
    port = -1;
  }
  if (port < 0)
    return fail(make_error(ErrorKind::kIo, "--host " + o.host + " --port " + std::to_string(o.port) +
                                               ": cannot listen (" + std::strerror(errno) + ")"));
  spdlog::info("listening on http://{}:{} (model '{}' loading)", o.host, port, o.served_model_name);

  std::atomic<int> exit_code{0};
  std::atomic<bool> exiting{false};
  worker.start(
      [&]() -> Result<std::unique_ptr<engine::Model>> {
        auto tok = tok::Tokenizer::load(o.tokenizer_path);
        if (!tok.ok()) return tok.error().with_context("--tokenizer");
        ctx.end_ids = qwen3_end_token_ids(*tok);
        ctx.tokenizer = std::make_shared<const tok::Tokenizer>(std::move(*tok));
        const uint64_t capacity = o.capacity.value_or(engine::default_capacity(plan->contract));
        KERN_ASSIGN_OR_RETURN(auto model, load_model(std::move(*plan), o.load, capacity, nullptr));
        spdlog::info("ready: model '{}' on {}, capacity {} tokens, max batch {}, max queue {}", o.served_model_name,
                     model->device_name(), model->capacity(), max_batch, o.max_queue);
        return model;
      },
      [&](const Error& e) {
        print_error(e.message);
        exit_code = exit_code_for(e);
        stop_when_listening(svr);
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
    stop_when_listening(svr);
    const auto grace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(o.shutdown_grace_s));
    if (!worker.wait_idle(std::chrono::steady_clock::now() + grace)) {
      spdlog::warn("shutdown grace period over: cancelling the running requests");
      worker.abort_running();
    }
  });

  svr.listen_after_bind();  // returns after stop(), once every handler returned
  exiting = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);  // ends its sigwait (it sees `exiting`)
  signal_thread.join();
  if (exit_code == 0) spdlog::info("stopped");
  return exit_code;
}

}  // namespace kern::run::serve
