// The engine loop of serve's ranks 1 .. N-1 (serve_rank.h).
#include "kern-run/serve/serve_rank.h"

#include <signal.h>

#include <set>
#include <string>

#include "kern-engine/engine.h"
#include "kern-run/cli_errors.h"
#include "kern-run/load_model.h"
#include "kern-run/rank_figures.h"
#include "kern-run/serve/tp_orders.h"

namespace kern::run::serve {

int run_serve_rank(const ServeOptions& o) {
  signal(SIGINT, SIG_IGN);
  const std::string rank = "rank " + std::to_string(o.load.tp_rank.value_or(0));
  auto opened = open_plan_for(o.plan_path, false);
  if (!opened.ok()) return fail(opened.error().with_context(rank));
  // The same batch and prefix cache as rank 0's engine (engine_worker.cpp),
  // which checked --max-batch before starting this rank.
  const size_t max_batch = o.max_batch.value_or(opened->batch ? opened->batch->max_batch : 1);
  const uint64_t capacity = o.capacity.value_or(engine::default_capacity(opened->contract));
  auto model = load_model(std::move(*opened), o.load, capacity, nullptr);
  if (!model.ok()) return fail(model.error());
  cpu::Collective* tp = (*model)->executable().device().collective();
  if (tp == nullptr) return fail(make_error(ErrorKind::kUsage, rank + ": serve --tp-rank without a world"));
  engine::Engine engine(**model);
  const bool prefix_cache = o.prefix_cache && (*model)->batch() != nullptr;
  if (Status s = engine.set_max_batch(max_batch, prefix_cache); !s.ok())
    return fail(s.error().with_context(rank + ": --max-batch"));
  std::set<engine::RequestId> running;
  for (;;) {
    // This rank's figures ride on the orders' all-gather (rank 0's /metrics).
    const std::vector<uint8_t> report = encode_rank_figures(rank_figures_of(**model, tp->rank()));
    auto orders = broadcast_orders(*tp, StepOrders{}, report);
    if (!orders.ok()) return fail(orders.error().with_context(rank + ": waiting for rank 0's step orders"));
    if (orders->kind == StepOrders::Kind::kExit) return 0;
    for (engine::RequestId id : orders->aborts) engine.abort(id);
    for (engine::Request& r : orders->adds) {
      const engine::RequestId id = r.id;
      if (Status s = engine.add_request(std::move(r)); !s.ok())  // rank 0 admitted it: the engines differ
        return fail(s.error().with_context(rank + ": request " + std::to_string(id) + " admitted by rank 0"));
      running.insert(id);
    }
    if (orders->kind != StepOrders::Kind::kStep || engine.idle()) continue;
    auto events = engine.step();
    if (!events.ok()) {  // as rank 0 does (engine_worker.cpp): end every running request
      for (engine::RequestId id : running) engine.abort(id);
      running.clear();
      (void)engine.drain();
      continue;
    }
    for (const engine::TokenEvent& ev : *events)
      if (ev.finished) running.erase(ev.id);
  }
}

}  // namespace kern::run::serve
