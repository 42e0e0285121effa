// The engine thread of kern-run serve (style.md §8: the engine core is
// single-threaded and owns the device; HTTP threads only parse, tokenize,
// enqueue and stream). The worker's thread loads the Model, sets the
// engine's max_batch (continuous batching over decode_batch when > 1), then
// runs Engine::step in a loop. HTTP threads submit Jobs into a bounded
// waiting queue (--max-queue); before every step the worker hands the head
// of the queue to the engine while the engine admits it at that step
// (Engine::admission: a batch slot and the KV pages for prompt + max_tokens
// free), so a request waits in this queue, in arrival order, until it fits,
// and joins the running batch at the next step. Every TokenEvent goes to its
// Job's channel; a sequence that finishes, is cancelled or fails leaves the
// batch and frees its pages in that step. Cancels (a client gone, a stop
// string matched) are applied on the worker's thread before the next step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "common/result.h"
#include "kern-engine/engine.h"
#include "kern-engine/model.h"
#include "kern-run/rank_figures.h"
#include "kern-run/serve/metrics.h"
#include "kernels-src/cpu/collective.h"

namespace kern::run::serve {

/// One generation handed to the worker, and the channel its events come back on.
class Job {
 public:
  explicit Job(engine::Request r) : request_(std::move(r)) {}
  /// The request (its id is set by EngineWorker::submit).
  engine::Request& request() { return request_; }

  /// Called on the worker thread: queues `ev` for the HTTP thread.
  void push(engine::TokenEvent ev);
  /// Waits until an event is queued or `deadline` passes; nullopt on timeout.
  std::optional<engine::TokenEvent> pop(std::chrono::steady_clock::time_point deadline);

 private:
  engine::Request request_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<engine::TokenEvent> events_;
};

/// The model's limits, known once it is loaded.
struct ModelLimits {
  uint64_t capacity = 0;  ///< tokens a sequence may hold (prompt + generated)
  uint64_t vocab = 0;     ///< valid ids are [0, vocab)
  std::string device;
  uint64_t max_batch = 1; ///< sequences decoded at once
  bool prefix_cache = false;  ///< the prefix cache is on
};

class EngineWorker {
 public:
  struct Config {
    size_t max_batch = 1;   ///< Engine::set_max_batch (checked against the plan before)
    size_t max_queue = 64;
    Metrics* metrics = nullptr;  ///< decode batch occupancy goes here (may be null)
    std::chrono::milliseconds load_delay{0};  ///< test hook: sleep before loading
    std::chrono::milliseconds step_delay{0};  ///< test hook: sleep after each engine step
    /// Test hook: the first admission waits until this many requests are
    /// queued (0: none), so a test knows they overlap.
    size_t gather{0};
    /// Map cached prompt prefixes (docs/serving.md "Prefix caching"); off
    /// where the plan has no decode_batch.
    bool prefix_cache = true;
  };
  using Loader = std::function<Result<std::unique_ptr<engine::Model>>()>;
  enum class State { kLoading, kReady, kFailed, kStopped };
  enum class Submit { kOk, kLoading, kQueueFull, kStopping };

  explicit EngineWorker(Config config);
  /// Stops and joins the thread (aborting what still runs).
  ~EngineWorker();
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;

  /// Starts the thread: it runs `loader`, then the engine loop. On a load
  /// failure the state becomes kFailed and `on_failure` is called (on the
  /// worker thread) with the error.
  void start(Loader loader, std::function<void(const Error&)> on_failure);

  State state() const { return state_.load(); }
  /// Valid once state() is kReady.
  const ModelLimits& limits() const { return limits_; }

  /// Queues `job` (assigning its request id) unless the model is loading,
  /// the server is stopping, or max_queue jobs already wait.
  Submit submit(const std::shared_ptr<Job>& job);

  /// Ends `job`: removed if waiting, aborted in the engine if running. Its
  /// channel gets a final kAborted event. Safe to call more than once and
  /// after it finished.
  void cancel(const std::shared_ptr<Job>& job);

  /// SIGTERM's first half: refuses new jobs (kStopping) and ends the
  /// waiting ones (kAborted with an error "the server is shutting down");
  /// running jobs continue.
  void stop_accepting();

  /// Aborts every running job (after the shutdown grace period).
  void abort_running();

  /// Waits until no job runs or `deadline`; true when none runs.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);

  EngineGauges gauges() const;

 private:
  void run(Loader loader, std::function<void(const Error&)> on_failure);
  /// Steps the engine until the worker stops. With `tp` (rank 0 of a
  /// tensor-parallel world), every engine call and step is first broadcast
  /// to the other ranks (tp_orders.h), at least every kTpHeartbeat when idle.
  /// Errors: a broadcast failed (a rank left or hangs); every job has ended.
  /// Every rank's figures come back with the orders (rank_figures.h);
  /// rank 0's own are read from `model` after each step.
  Status loop(engine::Engine& engine, engine::Model& model, cpu::Collective* tp);

  /// How often an idle rank 0 tells the other ranks it is alive: well
  /// inside their wait for a peer (kTpWaitTimeoutMs, 5 s).
  static constexpr std::chrono::milliseconds kTpHeartbeat{1000};

  Config config_;
  std::atomic<State> state_{State::kLoading};
  ModelLimits limits_;
  std::thread thread_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;       ///< wakes the worker: a job, a cancel, stop
  std::condition_variable idle_cv_;  ///< wakes wait_idle
  bool accepting_ = true;
  bool exit_ = false;
  engine::RequestId next_id_ = 1;
  std::deque<std::shared_ptr<Job>> waiting_;
  /// Handed to the engine (admitted at its next step), by request id.
  std::map<engine::RequestId, std::shared_ptr<Job>> running_;
  std::set<engine::RequestId> cancels_;
  uint64_t batch_size_ = 0;  ///< rows of the last decode step (0 once nothing runs)
  bool gathered_ = false;    ///< the gather hook let the first admission through
  engine::KvPages kv_;       ///< the engine's pages after the last step
  /// Every rank's figures by rank, as of rank 0's last step or broadcast
  /// (the gauges read rank 0's peak resident memory fresh).
  std::vector<RankFigures> ranks_;
  /// Of running_, those handed over since the last step: not admitted yet,
  /// so not in kv_; the gauges count them as waiting (a /metrics read
  /// between the hand-over and the step saw them running with no pages).
  uint64_t handed_ = 0;
};

}  // namespace kern::run::serve
