// POST /v1/chat/completions and /v1/completions (server_context.h): the
// HTTP thread's side of a generation. It checks the request against the
// model, submits a Job, and reads the Job's events into text (TextOutput),
// timing (TTFT, inter-token latency) and usage; then answers with one JSON
// body or streams SSE chunks. A stop string cancels the job; a client that
// goes away cancels it too, so its KV pages are free at once: mid-stream a
// failed write shows it, and while the handler waits without writing (in
// the queue, or generating a non-streaming answer) PeerWatch polls the
// connection every kPeerPoll.
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <random>

#include "kern-run/chat_template.h"
#include "kern-run/serve/api_error.h"
#include "kern-run/serve/api_request.h"
#include "kern-run/serve/api_response.h"
#include "kern-run/serve/peer_watch.h"
#include "kern-run/serve/server_context.h"
#include "kern-run/serve/text_output.h"
#include "spdlog/spdlog.h"

namespace kern::run::serve {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

/// How often a handler that waits without writing looks at its client's connection.
constexpr auto kPeerPoll = std::chrono::milliseconds(100);

/// One read of a job's channel.
struct Step {
  TextDelta delta;
  bool done = false;
  bool timeout = false;         ///< nothing arrived before the deadline
  std::string finish_reason;    ///< with done and no error: stop, length (abort: cancelled at shutdown)
  std::optional<ApiError> error;  ///< with done: the request failed (shutdown before it ran, engine error)
};

/// Reads one job's events: text, timing, usage, and the log line at the end.
class GenerationReader {
 public:
  GenerationReader(ServerContext& ctx, std::shared_ptr<Job> job, TextOutput text, Clock::time_point arrival,
                   std::string label)
      : ctx_(ctx), job_(std::move(job)), text_(std::move(text)), arrival_(arrival), label_(std::move(label)) {}

  /// Waits for the next event until `until`.
  Step next(Clock::time_point until) {
    Step st;
    if (done_) {
      st.done = true;
      return st;
    }
    auto ev = job_->pop(until);
    if (!ev) {
      st.timeout = true;
      return st;
    }
    const auto now = Clock::now();
    if (!ev->ids.empty()) {
      for (size_t i = 0; i < ev->ids.size(); ++i) {
        ++completion_tokens_;
        if (completion_tokens_ == 1) {
          t_first_ = now;
          ctx_.metrics.observe_ttft(seconds(now - arrival_));
        } else {
          // Several ids in one step (a speculative round) share its interval.
          ctx_.metrics.observe_itl(i == 0 ? seconds(now - t_last_) : 0.0);
        }
        TextDelta d = text_.push(ev->ids[i]);
        st.delta.content += d.content;
        st.delta.reasoning += d.reasoning;
        if (text_.stopped() && !ev->finished) {
          // A stop string: the engine would go on; end the job here.
          ctx_.worker.cancel(job_);
          return finish(st, "stop");
        }
      }
      t_last_ = now;
    }
    if (ev->finished) {
      switch (*ev->finished) {
        case engine::FinishReason::kStop:
        case engine::FinishReason::kLength: {
          TextDelta d = text_.finish();
          st.delta.content += d.content;
          st.delta.reasoning += d.reasoning;
          return finish(st, *ev->finished == engine::FinishReason::kStop || text_.stopped() ? "stop" : "length");
        }
        case engine::FinishReason::kAborted:
          if (ev->error) st.error = ApiError{503, ev->error->message, "service_unavailable", "", "shutting_down"};
          return finish(st, "abort");
        case engine::FinishReason::kError:
          // kUsage: the engine refused the request (Engine::add_request's
          // checks, e.g. sampling the batched program cannot do): a 400.
          if (ev->error && ev->error->kind == ErrorKind::kUsage)
            st.error = bad_request(ev->error->message);
          else
            st.error = ApiError{500, ev->error ? ev->error->message : "generation failed", "server_error", "", ""};
          return finish(st, "error");
      }
    }
    return st;
  }

  /// Ends the job early (timeout, a client gone).
  void cancel(const std::string& why) {
    if (done_) return;
    ctx_.worker.cancel(job_);
    Step st;
    finish(st, why);
  }

  const TextOutput& text() const { return text_; }
  Usage usage() const { return {job_->request().prompt_ids.size(), completion_tokens_}; }

 private:
  Step& finish(Step& st, const std::string& reason) {
    st.done = true;
    st.finish_reason = reason;
    done_ = true;
    ctx_.metrics.add_tokens(job_->request().prompt_ids.size(), completion_tokens_);
    const double decode_s = completion_tokens_ > 1 ? seconds(t_last_ - t_first_) : 0.0;
    const double ttft_ms = completion_tokens_ > 0 ? seconds(t_first_ - arrival_) * 1e3 : 0.0;
    spdlog::info("{}: prompt {} tokens, generated {} tokens, ttft {:.1f} ms, {:.1f} tok/s, finish {}", label_,
                 job_->request().prompt_ids.size(), completion_tokens_, ttft_ms,
                 decode_s > 0 ? (completion_tokens_ - 1) / decode_s : 0.0, reason);
    return st;
  }

  ServerContext& ctx_;
  std::shared_ptr<Job> job_;
  TextOutput text_;
  Clock::time_point arrival_, t_first_, t_last_;
  std::string label_;
  uint64_t completion_tokens_ = 0;
  bool done_ = false;
};

void log_ignored(ServerContext& ctx, const std::vector<std::string>& fields) {
  std::lock_guard<std::mutex> lock(ctx.logged_mutex);
  for (const std::string& f : fields)
    if (ctx.logged_fields.insert(f).second) spdlog::warn("request field '{}' is not used by kern; ignored", f);
}

ApiError context_exceeded(uint64_t capacity, uint64_t prompt, std::optional<uint64_t> max_tokens) {
  std::string m = "this model's maximum context length is " + std::to_string(capacity) +
                  " tokens; the prompt has " + std::to_string(prompt) + " tokens";
  if (max_tokens) m += " and max_tokens is " + std::to_string(*max_tokens);
  return bad_request(m, max_tokens ? "max_tokens" : "messages", "context_length_exceeded");
}

/// The prompt's ids: the templated chat, the text prompt, or the given ids.
std::optional<ApiError> prompt_ids(const GenParams& p, const tok::Tokenizer& tok, uint64_t vocab,
                                   std::vector<int64_t>& ids) {
  const char* param = p.endpoint == Endpoint::kChat ? "messages" : "prompt";
  std::string text;
  if (p.endpoint == Endpoint::kChat) {
    auto rendered = render_qwen3_messages(p.messages, p.chat);
    if (!rendered.ok()) return bad_request(rendered.error().message, param);
    text = std::move(*rendered);
  } else if (p.prompt_text) {
    text = *p.prompt_text;
  } else {
    for (size_t i = 0; i < p.prompt_ids.size(); ++i)
      if (p.prompt_ids[i] < 0 || static_cast<uint64_t>(p.prompt_ids[i]) >= vocab)
        return bad_request("'prompt[" + std::to_string(i) + "]' is " + std::to_string(p.prompt_ids[i]) +
                               ": outside the vocabulary [0, " + std::to_string(vocab) + ")",
                           param);
    ids = p.prompt_ids;
    return std::nullopt;
  }
  auto enc = tok.encode(text);
  if (!enc.ok()) return bad_request(enc.error().message, param);
  ids.assign(enc->begin(), enc->end());
  if (ids.empty()) return bad_request("the prompt is empty", param);
  return std::nullopt;
}

/// What a streaming response carries between calls of its content provider.
struct StreamState {
  ResponseMeta meta;
  std::shared_ptr<GenerationReader> reader;
  Step first;
  bool started = false;
  bool finished = false;
  bool include_usage = false;
  Clock::time_point deadline;
  Clock::time_point last_write;
};

void write_delta(const StreamState& s, const TextDelta& d, std::string& out) {
  if (d.empty()) return;
  std::optional<std::string> content, reasoning;
  if (!d.content.empty()) content = d.content;
  if (!d.reasoning.empty()) reasoning = d.reasoning;
  out += sse(chunk_json(s.meta, false, content, reasoning, std::nullopt, s.include_usage));
}

/// One call of the SSE content provider: writes everything that arrives
/// until the end; false (the connection is dropped) when the client is gone.
bool stream_events(ServerContext& ctx, StreamState& s, httplib::DataSink& sink) {
  auto write = [&](const std::string& text) {
    if (text.empty()) return true;
    s.last_write = Clock::now();
    return sink.write(text.data(), text.size());
  };
  auto gone = [&] {
    ctx.metrics.count_request(499);  // counted before the engine can let the sequence go
    s.reader->cancel("client disconnected");
    s.finished = true;
    return false;
  };
  const auto keepalive = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(ctx.options.keepalive_s));
  std::optional<Step> pending;
  if (!s.started) {
    s.started = true;
    if (s.meta.endpoint == Endpoint::kChat &&
        !write(sse(chunk_json(s.meta, true, std::string(), std::nullopt, std::nullopt, s.include_usage))))
      return gone();
    pending = std::move(s.first);
  }
  for (;;) {
    Step st = pending ? std::move(*pending) : s.reader->next(std::min(s.deadline, Clock::now() + keepalive));
    pending.reset();
    const auto now = Clock::now();
    if (st.timeout && now >= s.deadline) {
      // Counted before the engine can let the sequence go and before the
      // client reads [DONE], as 499 is: /metrics never shows it missing.
      ctx.metrics.count_request(504);
      s.reader->cancel("timeout");
      ApiError e{504, "the request ran longer than --request-timeout", "timeout", "", "timeout"};
      write(sse(error_json(e)) + "data: [DONE]\n\n");
      s.finished = true;
      sink.done();
      return true;
    }
    std::string out;
    write_delta(s, st.delta, out);
    if (!st.done) {
      if (out.empty() && now - s.last_write >= keepalive) out = ": keep-alive\n\n";
      if (!write(out)) return gone();
      continue;
    }
    if (st.error && st.error->status != 503) {
      out += sse(error_json(*st.error));
    } else {
      // The last choice chunk: no content, the finish reason (abort: cancelled at shutdown).
      out += sse(chunk_json(s.meta, false, std::nullopt, std::nullopt, st.finish_reason, s.include_usage));
      if (s.include_usage) out += sse(usage_chunk_json(s.meta, s.reader->usage()));
    }
    out += "data: [DONE]\n\n";
    if (!write(out)) return gone();
    ctx.metrics.count_request(st.error && st.error->status != 503 ? st.error->status : 200);
    s.finished = true;
    sink.done();
    return true;
  }
}

}  // namespace

void reply_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(error_json(e), "application/json");
}

void handle_generation(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat) {
  const auto arrival = Clock::now();
  auto fail = [&](const ApiError& e) {
    ctx.metrics.count_request(e.status);
    reply_error(res, e);
  };
  GenParams p;
  if (auto e = parse_generation(req.body, chat ? Endpoint::kChat : Endpoint::kCompletion, p)) return fail(*e);
  log_ignored(ctx, p.ignored_fields);
  if (!p.model.empty() && p.model != ctx.options.served_model_name)
    return fail(ApiError{404, "the model '" + p.model + "' does not exist (this server serves '" +
                                  ctx.options.served_model_name + "')",
                         "not_found_error", "model", "model_not_found"});
  switch (ctx.worker.state()) {
    case EngineWorker::State::kReady: break;
    case EngineWorker::State::kLoading:
      return fail(ApiError{503, "the model is loading", "service_unavailable", "", "model_loading"});
    default: return fail(ApiError{503, "the server is shutting down", "service_unavailable", "", "shutting_down"});
  }
  const tok::Tokenizer& tok = *ctx.tokenizer;
  const ModelLimits& lim = ctx.worker.limits();
  std::vector<int64_t> ids;
  if (auto e = prompt_ids(p, tok, lim.vocab, ids)) return fail(*e);
  for (size_t i = 0; i < p.stop_token_ids.size(); ++i)
    if (p.stop_token_ids[i] < 0 || static_cast<uint64_t>(p.stop_token_ids[i]) >= lim.vocab)
      return fail(bad_request("'stop_token_ids[" + std::to_string(i) + "]' is " +
                                  std::to_string(p.stop_token_ids[i]) + ": outside the vocabulary [0, " +
                                  std::to_string(lim.vocab) + ")",
                              "stop_token_ids"));
  const uint64_t n = ids.size();
  if (n >= lim.capacity) return fail(context_exceeded(lim.capacity, n, std::nullopt));
  if (p.max_tokens && n + *p.max_tokens > lim.capacity) return fail(context_exceeded(lim.capacity, n, p.max_tokens));
  const uint64_t max_tokens = p.max_tokens ? *p.max_tokens : std::min(ctx.options.default_max_tokens, lim.capacity - n);
  if (Status s = engine::check_sampling(p.sampling); !s.ok())
    return fail(bad_request(s.error().message, "temperature"));
  if (!p.seed_given) p.sampling.seed = std::random_device{}() * 0x100000001ull;

  engine::Request r;
  r.prompt_ids = std::move(ids);
  r.max_tokens = max_tokens;
  if (!p.ignore_eos) r.stop_ids = ctx.end_ids;
  r.stop_ids.insert(r.stop_ids.end(), p.stop_token_ids.begin(), p.stop_token_ids.end());
  r.chunk = ctx.options.chunk;
  r.sampling = p.sampling;
  TextOutput text(tok, p.skip_special_tokens, r.stop_ids, p.stop, chat && p.chat.enable_thinking);
  auto job = std::make_shared<Job>(std::move(r));
  switch (ctx.worker.submit(job)) {
    case EngineWorker::Submit::kOk: break;
    case EngineWorker::Submit::kQueueFull:
      return fail(ApiError{429, "the server's queue is full (" + std::to_string(ctx.options.max_queue) +
                                    " requests waiting); retry later",
                           "rate_limit_error", "", "queue_full"});
    case EngineWorker::Submit::kLoading:
      return fail(ApiError{503, "the model is loading", "service_unavailable", "", "model_loading"});
    case EngineWorker::Submit::kStopping:
      return fail(ApiError{503, "the server is shutting down", "service_unavailable", "", "shutting_down"});
  }
  ResponseMeta meta{chat ? Endpoint::kChat : Endpoint::kCompletion, new_response_id(chat ? Endpoint::kChat : Endpoint::kCompletion),
                    static_cast<int64_t>(std::time(nullptr)), ctx.options.served_model_name};
  auto reader = std::make_shared<GenerationReader>(ctx, job, std::move(text), arrival,
                                                   meta.id + " (request " + std::to_string(job->request().id) + ")");
  const auto deadline = arrival + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(ctx.options.request_timeout_s));
  auto timed_out = [&] {
    ctx.metrics.count_request(504);  // counted before the engine can let the sequence go
    reader->cancel("timeout");
    reply_error(res, ApiError{504, "the request ran longer than --request-timeout", "timeout", "", "timeout"});
  };
  const PeerWatch peer(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  if (!peer.found())
    spdlog::warn("{}: the connection's socket was not found: a client that leaves is noticed only by a write", meta.id);
  // The next event, looking at the connection every kPeerPoll (events or
  // not); a timeout step at the deadline, or `gone` when the client left.
  bool gone = false;
  auto next_peer_check = Clock::now() + kPeerPoll;
  auto wait = [&]() -> Step {
    for (;;) {
      Step st = reader->next(std::min(deadline, next_peer_check));
      const auto now = Clock::now();
      if (now >= next_peer_check) {
        next_peer_check = now + kPeerPoll;
        if (!peer.alive()) {
          gone = true;
          return st;
        }
      }
      if (!st.timeout || now >= deadline) return st;
    }
  };
  auto client_gone = [&] {
    ctx.metrics.count_request(499);  // counted before the engine can let the sequence go
    reader->cancel("client disconnected");
    res.status = 499;  // nobody reads it
  };
  // The first event (after the queue wait): a request that never ran gets its status.
  Step first = wait();
  if (gone) return client_gone();
  if (first.timeout) return timed_out();
  if (first.error) return fail(*first.error);
  if (!p.stream) {
    Step st = std::move(first);
    while (!st.done) {
      st = wait();
      if (gone) return client_gone();
      if (st.timeout) return timed_out();
    }
    if (st.error) return fail(*st.error);
    res.set_content(completion_json(meta, reader->text().content(), reader->text().reasoning(), st.finish_reason,
                                    reader->usage()),
                    "application/json");
    ctx.metrics.count_request(200);
    return;
  }
  auto state = std::make_shared<StreamState>();
  state->meta = std::move(meta);
  state->reader = reader;
  state->first = std::move(first);
  state->include_usage = p.include_usage;
  state->deadline = deadline;
  state->last_write = Clock::now();
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [&ctx, state](size_t, httplib::DataSink& sink) { return stream_events(ctx, *state, sink); },
      [&ctx, state](bool) {
        // The connection ended before the stream did (a write error, the server stopping).
        if (!state->finished) {
          ctx.metrics.count_request(499);
          state->reader->cancel("client disconnected");
        }
      });
}

}  // namespace kern::run::serve
