// The engine thread of kern-run serve (engine_worker.h).
#include "kern-run/serve/engine_worker.h"

#include <algorithm>

#include "kern-run/report.h"
#include "kern-run/serve/tp_orders.h"


namespace kern::run::serve {

void Job::push(engine::TokenEvent ev) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(ev));
  }
  cv_.notify_one();
}

std::optional<engine::TokenEvent> Job::pop(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_until(lock, deadline, [this] { return !events_.empty(); })) return std::nullopt;
  engine::TokenEvent ev = std::move(events_.front());
  events_.pop_front();
  return ev;
}

namespace {

engine::TokenEvent aborted_event(engine::RequestId id, std::optional<std::string> why) {
  engine::TokenEvent ev;
  ev.id = id;
  ev.finished = engine::FinishReason::kAborted;
  if (why) ev.error = make_error(ErrorKind::kUsage, *why);
  return ev;
}

}  // namespace

EngineWorker::EngineWorker(Config config) : config_(config) {}

EngineWorker::~EngineWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exit_ = true;
    accepting_ = false;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineWorker::start(Loader loader, std::function<void(const Error&)> on_failure) {
  thread_ = std::thread([this, loader = std::move(loader), on_failure = std::move(on_failure)]() mutable {
    run(std::move(loader), std::move(on_failure));
  });
}

void EngineWorker::run(Loader loader, std::function<void(const Error&)> on_failure) {
  if (config_.load_delay.count() > 0) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, config_.load_delay, [this] { return exit_; });
    if (exit_) return;
  }
  auto model = loader();
  if (!model.ok()) {
    state_ = State::kFailed;
    if (on_failure) on_failure(model.error());
    return;
  }
  {
    engine::Engine engine(**model);
    // The prefix cache needs decode_batch (its pages go through block tables).
    const bool prefix_cache = config_.prefix_cache && (*model)->batch() != nullptr;
    if (Status s = engine.set_max_batch(config_.max_batch, prefix_cache); !s.ok()) {
      state_ = State::kFailed;
      if (on_failure) on_failure(s.error().with_context("--max-batch"));
      return;
    }
    limits_.capacity = engine.max_sequence_tokens();
    limits_.vocab = (*model)->contract().vocab;
    limits_.device = (*model)->device_name();
    limits_.max_batch = config_.max_batch;
    limits_.prefix_cache = prefix_cache;
    // With tensor parallelism every engine call goes to the other ranks too.
    cpu::Collective* tp = (*model)->executable().device().collective();
    if (tp != nullptr && tp->world() <= 1) tp = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      kv_ = engine.kv_pages();
      ranks_.assign(tp != nullptr ? tp->world() : 1, RankFigures{});
      ranks_[0] = rank_figures_of(**model, 0);
    }
    state_ = State::kReady;
    Status ended = loop(engine, **model, tp);
    state_ = ended.ok() ? State::kStopped : State::kFailed;
    if (!ended.ok() && on_failure) on_failure(ended.error());
  }
  idle_cv_.notify_all();
}

EngineWorker::Submit EngineWorker::submit(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!accepting_) return Submit::kStopping;
  if (state_.load() != State::kReady) return Submit::kLoading;
  if (waiting_.size() >= config_.max_queue) return Submit::kQueueFull;
  job->request().id = next_id_++;
  waiting_.push_back(job);
  cv_.notify_all();
  return Submit::kOk;
}

void EngineWorker::cancel(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lock(mutex_);
  cancels_.insert(job->request().id);
  cv_.notify_all();
}

void EngineWorker::stop_accepting() {
  std::lock_guard<std::mutex> lock(mutex_);
  accepting_ = false;
  for (auto& job : waiting_) job->push(aborted_event(job->request().id, "the server is shutting down"));
  waiting_.clear();
  cv_.notify_all();
}

void EngineWorker::abort_running() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, job] : running_) cancels_.insert(id);
  cv_.notify_all();
}

bool EngineWorker::wait_idle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  return idle_cv_.wait_until(lock, deadline, [this] {
    return (running_.empty() && waiting_.empty()) || state_.load() != State::kReady;
  });
}

EngineGauges EngineWorker::gauges() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineGauges g;
  g.running = running_.size() - std::min<uint64_t>(handed_, running_.size());
  g.waiting = waiting_.size() + std::min<uint64_t>(handed_, running_.size());
  g.max_batch = config_.max_batch;
  g.batch_size = batch_size_;
  g.kv_pages_total = kv_.total;
  g.kv_pages_used = kv_.used;
  g.kv_pages_cached = kv_.cached;
  g.prefix_cache_evictions = kv_.evictions;
  g.prefix_cache_reprefilled_tokens = kv_.reprefilled_tokens;
  g.prefix_cache_reprefills_pending = kv_.reprefills_pending;
  g.ranks = ranks_;
  if (!g.ranks.empty()) g.ranks[0].peak_rss = peak_rss_bytes();
  return g;
}

Status EngineWorker::loop(engine::Engine& engine, engine::Model& model, cpu::Collective* tp) {
  for (;;) {
    StepOrders orders;  // this iteration's engine calls, for the other ranks (tp)
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // A queue head that must wait for pages or a slot implies a busy
      // engine (an idle one has them all free): this never spins idle.
      // The gather hook: nothing is admitted before `gather` requests wait
      // (once; cancels are still handled meanwhile).
      auto gathered = [&] {
        if (!gathered_ && waiting_.size() >= config_.gather) gathered_ = true;
        return gathered_;
      };
      auto work = [&] {
        return exit_ || (!waiting_.empty() && gathered()) || !cancels_.empty() || !engine.idle();
      };
      if (tp == nullptr) {
        cv_.wait(lock, work);
      } else {
        // Idle, the other ranks still hear from rank 0 within their wait.
        cv_.wait_for(lock, kTpHeartbeat, work);
      }
      if (exit_) {
        for (auto& [id, job] : running_) job->push(aborted_event(id, "the server is shutting down"));
        for (auto& job : waiting_) job->push(aborted_event(job->request().id, "the server is shutting down"));
        running_.clear();
        waiting_.clear();
        break;
      }
      for (engine::RequestId id : cancels_) {
        auto w = std::find_if(waiting_.begin(), waiting_.end(),
                              [id](const std::shared_ptr<Job>& j) { return j->request().id == id; });
        if (w != waiting_.end()) {
          (*w)->push(aborted_event(id, std::nullopt));
          waiting_.erase(w);
        } else if (running_.count(id)) {
          engine.abort(id);  // leaves the batch and frees its pages in the next step
          orders.aborts.push_back(id);
        }
      }
      cancels_.clear();
      // Hand over the queue's head while the next step admits it (FIFO: a
      // head that does not fit yet holds back the requests behind it). One
      // that can never fit, or that the engine refuses, gets add_request's
      // error (kUsage: the HTTP side answers 400).
      while (gathered() && !waiting_.empty() &&
             engine.admission(waiting_.front()->request()) != engine::Admission::kLater) {
        std::shared_ptr<Job> job = std::move(waiting_.front());
        waiting_.pop_front();
        Status added = engine.add_request(job->request());
        if (!added.ok()) {
          engine::TokenEvent ev;
          ev.id = job->request().id;
          ev.finished = engine::FinishReason::kError;
          ev.error = added.error();
          job->push(std::move(ev));
          continue;
        }
        if (tp != nullptr) orders.adds.push_back(job->request());
        running_[job->request().id] = job;
        ++handed_;
      }
    }
    if (tp != nullptr) {
      orders.kind = engine.idle() ? StepOrders::Kind::kIdle : StepOrders::Kind::kStep;
      std::vector<std::vector<uint8_t>> reports;
      auto sent = broadcast_orders(*tp, orders, {}, &reports);
      Result<std::vector<RankFigures>> figures = sent.ok() ? decode_gathered_figures(reports, 0u) : sent.error();
      if (figures.ok()) {
        std::lock_guard<std::mutex> lock(mutex_);
        for (uint32_t r = 1; r < figures->size() && r < ranks_.size(); ++r) ranks_[r] = std::move((*figures)[r]);
        ranks_[0] = rank_figures_of(model, 0);  // its collectives as of the same broadcast
      } else {
        sent = figures.error();
      }
      if (!sent.ok()) {  // a rank left, hangs or sent garbage: this world cannot step any more
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [id, job] : running_) {
          engine::TokenEvent ev;
          ev.id = id;
          ev.finished = engine::FinishReason::kError;
          ev.error = sent.error();
          job->push(std::move(ev));
        }
        for (auto& job : waiting_) job->push(aborted_event(job->request().id, "the server is stopping"));
        running_.clear();
        waiting_.clear();
        accepting_ = false;
        idle_cv_.notify_all();
        return sent.error().with_context("tensor parallelism");
      }
    }
    if (engine.idle()) continue;
    auto events = engine.step();
    if (config_.step_delay.count() > 0) std::this_thread::sleep_for(config_.step_delay);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!events.ok()) {
      // A step that failed outside any one request: end them all.
      for (auto& [id, job] : running_) {
        engine.abort(id);
        engine::TokenEvent ev;
        ev.id = id;
        ev.finished = engine::FinishReason::kError;
        ev.error = events.error();
        job->push(std::move(ev));
      }
      running_.clear();
      (void)engine.drain();
    } else {
      // The rows of this step's decode: the sequences that got an id.
      uint64_t rows = 0;
      for (engine::TokenEvent& ev : *events) {
        auto it = running_.find(ev.id);
        if (it == running_.end()) continue;
        if (!ev.ids.empty()) ++rows;
        const bool done = ev.finished.has_value();
        it->second->push(std::move(ev));
        if (done) running_.erase(it);
      }
      if (rows > 0) {
        batch_size_ = rows;
        if (config_.metrics != nullptr) config_.metrics->observe_decode_rows(rows);
      }
    }
    if (running_.empty()) batch_size_ = 0;
    kv_ = engine.kv_pages();
    ranks_[0] = rank_figures_of(model, 0);
    handed_ = 0;  // this step admitted them
    if (running_.empty() && waiting_.empty()) idle_cv_.notify_all();
  }
  if (tp != nullptr) {  // the other ranks end with rank 0
    StepOrders exit_orders;
    exit_orders.kind = StepOrders::Kind::kExit;
    (void)broadcast_orders(*tp, exit_orders);
  }
  return {};
}

}  // namespace kern::run::serve
