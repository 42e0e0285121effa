// POST /v1/chat/completions and /v1/completions (server_context.h): the
// HTTP thread's side of a generation. It checks the request against the
// model, submits a Job, and reads the Job's events into text (TextOutput),
// timing (TTFT, inter-token latency) and usage; then answers with one JSON
// body or streams SSE chunks. A stop string cancels the job; a client that
// goes away cancels it too, so its KV pages are free at once: mid-stream a
// failed write shows it, and while the handler waits without writing (in
// the queue, or generating a non-streaming answer) the exchange polls the
// connection every kPeerPoll.
#include <chrono>
#include <ctime>
#include <random>

#include "common/terminal_text.h"
#include "kern-run/chat_template.h"
#include "kern-run/end_tokens.h"
#include "kern-run/serve/api_error.h"
#include "kern-run/serve/api_request.h"
#include "kern-run/serve/api_response.h"
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
    cached_tokens_ = std::max(cached_tokens_, ev->cached_tokens);
    if (!ev->ids.empty()) {
      for (size_t i = 0; i < ev->ids.size(); ++i) {
        ++completion_tokens_;
        reply_ids_.push_back(ev->ids[i]);
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
  Usage usage() const { return {job_->request().prompt_ids.size(), completion_tokens_, cached_tokens_}; }
  /// Called once when the reply ends with finish reason stop or length, with
  /// its text and ids (the chat endpoint remembers the turn: PromptMemo).
  void on_complete(std::function<void(const TextOutput&, const std::vector<int64_t>&)> f) { on_complete_ = std::move(f); }

 private:
  Step& finish(Step& st, const std::string& reason) {
    st.done = true;
    st.finish_reason = reason;
    done_ = true;
    if (on_complete_ && (reason == "stop" || reason == "length") && !st.error) on_complete_(text_, reply_ids_);
    ctx_.metrics.add_tokens(job_->request().prompt_ids.size(), completion_tokens_, cached_tokens_);
    const double decode_s = completion_tokens_ > 1 ? seconds(t_last_ - t_first_) : 0.0;
    const double ttft_ms = completion_tokens_ > 0 ? seconds(t_first_ - arrival_) * 1e3 : 0.0;
    spdlog::info("{}: prompt {} tokens ({} cached), generated {} tokens, ttft {:.1f} ms, {:.1f} tok/s, finish {}",
                 label_, job_->request().prompt_ids.size(), cached_tokens_, completion_tokens_, ttft_ms,
                 decode_s > 0 ? (completion_tokens_ - 1) / decode_s : 0.0, reason);
    return st;
  }

  ServerContext& ctx_;
  std::shared_ptr<Job> job_;
  TextOutput text_;
  Clock::time_point arrival_, t_first_, t_last_;
  std::string label_;
  uint64_t completion_tokens_ = 0;
  uint64_t cached_tokens_ = 0;  ///< prompt tokens the engine mapped from the prefix cache
  std::vector<int64_t> reply_ids_;
  std::function<void(const TextOutput&, const std::vector<int64_t>&)> on_complete_;
  bool done_ = false;
};

/// Unknown field names logged at most once each, this many in all, each cut
/// to this many bytes and escaped (terminal_safe): a client's text never
/// acts on the operator's terminal, forges a log line or grows the set.
constexpr size_t kMaxLoggedFields = 64;
constexpr size_t kMaxLoggedFieldBytes = 64;

/// A prompt text shrinks at most this many times under NFC normalization
/// (three decomposed Hangul jamo of 3 bytes each compose into one syllable
/// of 3; Unicode's stability guarantees bound the factor by 3): a text of
/// more than capacity * max_token_bytes * kNormalizationShrink bytes has
/// more than `capacity` tokens.
constexpr uint64_t kNormalizationShrink = 3;

}  // namespace

std::string loggable_field_name(std::string_view name) {
  std::string cut(name.substr(0, kMaxLoggedFieldBytes));
  // Never end inside a UTF-8 character (it would print as U+FFFD).
  while (!cut.empty() && cut.size() < name.size() && (static_cast<unsigned char>(name[cut.size()]) & 0xC0) == 0x80)
    cut.pop_back();
  std::string out = terminal_safe(cut, TerminalText::kName);
  if (cut.size() < name.size()) out += "…(" + std::to_string(name.size()) + " bytes)";
  return out;
}

namespace {

void log_ignored(ServerContext& ctx, const std::vector<std::string>& fields) {
  std::lock_guard<std::mutex> lock(ctx.logged_mutex);
  for (const std::string& f : fields) {
    const std::string key = f.substr(0, kMaxLoggedFieldBytes);
    if (ctx.logged_fields.count(key) != 0) continue;
    if (ctx.logged_fields.size() >= kMaxLoggedFields) {
      if (!ctx.logged_fields_full)
        spdlog::warn("{} unknown request field names logged; further ones are ignored without a word",
                     kMaxLoggedFields);
      ctx.logged_fields_full = true;
      return;
    }
    ctx.logged_fields.insert(key);
    spdlog::warn("request field '{}' is not used by kern; ignored", loggable_field_name(f));
  }
}

ApiError context_exceeded(uint64_t capacity, uint64_t prompt, std::optional<uint64_t> max_tokens,
                          bool at_least = false) {
  std::string m = "this model's maximum context length is " + std::to_string(capacity) + " tokens; the prompt has " +
                  (at_least ? "more than " : "") + std::to_string(prompt) + " tokens";
  if (max_tokens) m += " and max_tokens is " + std::to_string(*max_tokens);
  return bad_request(m, max_tokens ? "max_tokens" : "messages", "context_length_exceeded");
}

/// The template's options for a chat request: earlier replies keep their
/// think block (stable_history), so a resent conversation renders its
/// history as it was generated (docs/serving.md "Prefix caching").
ChatTemplateOptions chat_options(const GenParams& p) {
  ChatTemplateOptions o = p.chat;
  o.stable_history = true;
  return o;
}

/// The prompt's ids: the templated chat (`text`: its rendering; the ids of
/// the longest conversation prefix `memo` remembers, then the encoding of
/// the rest), the text prompt, or the given ids. A text that cannot fit
/// `capacity` tokens by its length alone is refused before it is tokenized.
std::optional<ApiError> prompt_ids(const GenParams& p, const tok::Tokenizer& tok, const PromptMemo& memo,
                                   uint64_t vocab, uint64_t capacity, size_t max_token_bytes,
                                   std::vector<int64_t>& ids, std::string& text) {
  const char* param = p.endpoint == Endpoint::kChat ? "messages" : "prompt";
  if (p.endpoint == Endpoint::kChat) {
    if (Status chat = check_chat_tokens(tok, "/v1/chat/completions"); !chat.ok())
      return bad_request(chat.error().message, param);
    auto rendered = render_qwen3_messages(p.messages, chat_options(p));
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
  if (max_token_bytes > 0 && text.size() / (max_token_bytes * kNormalizationShrink) >= capacity) {
    ApiError e = context_exceeded(capacity, capacity, std::nullopt, true);
    e.param = param;
    e.message += " (its " + std::to_string(text.size()) + " bytes cannot be fewer tokens; refused before tokenizing)";
    return e;
  }
  std::optional<PromptMemo::Hit> hit;
  if (p.endpoint == Endpoint::kChat) hit = memo.longest_prefix(text);
  auto enc = tok.encode(hit ? std::string_view(text).substr(hit->bytes) : std::string_view(text));
  if (!enc.ok()) return bad_request(enc.error().message, param);
  if (hit) ids = std::move(hit->ids);
  ids.insert(ids.end(), enc->begin(), enc->end());
  if (ids.empty()) return bad_request("the prompt is empty", param);
  return std::nullopt;
}

void write_delta(const ResponseMeta& meta, bool include_usage, const TextDelta& d, std::string& out) {
  if (d.empty()) return;
  std::optional<std::string> content, reasoning;
  if (!d.content.empty()) content = d.content;
  if (!d.reasoning.empty()) reasoning = d.reasoning;
  out += sse(chunk_json(meta, false, content, reasoning, std::nullopt, include_usage));
}

/// Streams the answer as SSE from its first event to [DONE]; cancels the job
/// when the client is gone (a write fails) or the deadline passes.
void stream_events(ServerContext& ctx, HttpExchange& ex, const ResponseMeta& meta, GenerationReader& reader,
                   Step first, bool include_usage, Clock::time_point deadline) {
  auto last_write = Clock::now();
  auto write = [&](const std::string& text) {
    if (text.empty()) return true;
    last_write = Clock::now();
    return ex.write(text);
  };
  auto gone = [&] {
    ctx.metrics.count_request(499);  // counted before the engine can let the sequence go
    reader.cancel("client disconnected");
  };
  const auto keepalive = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(ctx.options.keepalive_s));
  if (!ex.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}})) return gone();
  if (meta.endpoint == Endpoint::kChat &&
      !write(sse(chunk_json(meta, true, std::string(), std::nullopt, std::nullopt, include_usage))))
    return gone();
  std::optional<Step> pending = std::move(first);
  for (;;) {
    Step st = pending ? std::move(*pending) : reader.next(std::min(deadline, Clock::now() + keepalive));
    pending.reset();
    const auto now = Clock::now();
    if (st.timeout && now >= deadline) {
      // Counted before the engine can let the sequence go and before the
      // client reads [DONE], as 499 is: /metrics never shows it missing.
      ctx.metrics.count_request(504);
      reader.cancel("timeout");
      ApiError e{504, "the request ran longer than --request-timeout", "timeout", "", "timeout"};
      if (write(sse(error_json(e)) + "data: [DONE]\n\n")) ex.end_stream();
      return;
    }
    std::string out;
    write_delta(meta, include_usage, st.delta, out);
    if (!st.done) {
      if (out.empty() && now - last_write >= keepalive) out = ": keep-alive\n\n";
      if (!write(out)) return gone();
      continue;
    }
    if (st.error && st.error->status != 503) {
      out += sse(error_json(*st.error));
    } else {
      // The last choice chunk: no content, the finish reason (abort: cancelled at shutdown).
      out += sse(chunk_json(meta, false, std::nullopt, std::nullopt, st.finish_reason, include_usage));
      if (include_usage) out += sse(usage_chunk_json(meta, reader.usage()));
    }
    out += "data: [DONE]\n\n";
    if (!write(out) || !ex.end_stream()) return gone();
    ctx.metrics.count_request(st.error && st.error->status != 503 ? st.error->status : 200);
    return;
  }
}

}  // namespace

HttpResponse error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.body = error_json(e);
  return r;
}

void reply_error(HttpExchange& ex, const ApiError& e) { ex.respond(error_response(e)); }

namespace {

/// Remembers a finished chat turn in ctx.memo: the conversation with the
/// reply rendered as the next request will render it, when that text is the
/// prompt's text `rendered` plus the reply's ids' text and the template's
/// "<|im_end|>\n" (a stop string cut the text, or a reasoning block the
/// template formats otherwise: nothing is remembered).
void remember_turn(ServerContext& ctx, const tok::Tokenizer& tok, const GenParams& p, const std::string& rendered,
                   const std::vector<int64_t>& prompt, const TextOutput& out, const std::vector<int64_t>& reply) {
  std::vector<int64_t> gen = reply;
  if (!gen.empty() && engine::is_stop_id(ctx.end_ids, gen.back())) gen.pop_back();
  std::vector<ChatMessage> messages = p.messages;
  std::optional<std::string> reasoning;
  if (p.chat.enable_thinking) reasoning = out.reasoning();
  messages.push_back({"assistant", out.content(), reasoning});
  ChatTemplateOptions o = chat_options(p);
  o.add_generation_prompt = false;
  auto full = render_qwen3_messages(messages, o);
  if (!full.ok() || full->compare(0, rendered.size(), rendered) != 0) return;
  const std::string close = "<|im_end|>\n";
  const std::vector<int32_t> gen32(gen.begin(), gen.end());
  if (full->compare(rendered.size(), std::string::npos, tok.decode(gen32) + close) != 0) return;
  auto closing = tok.encode(close);
  if (!closing.ok()) return;
  std::vector<int64_t> ids = prompt;
  ids.insert(ids.end(), gen.begin(), gen.end());
  ids.insert(ids.end(), closing->begin(), closing->end());
  ctx.memo.remember(std::move(*full), std::move(ids));
}

}  // namespace

void handle_generation(ServerContext& ctx, HttpExchange& ex, bool chat) {
  const auto arrival = Clock::now();
  auto fail = [&](const ApiError& e) {
    ctx.metrics.count_request(e.status);
    reply_error(ex, e);
  };
  GenParams p;
  if (auto e = parse_generation(ex.request().body, chat ? Endpoint::kChat : Endpoint::kCompletion, p)) return fail(*e);
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
  std::string rendered;
  if (auto e = prompt_ids(p, tok, ctx.memo, lim.vocab, lim.capacity, ctx.max_token_bytes, ids, rendered))
    return fail(*e);
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
  GenerationReader reader(ctx, job, std::move(text), arrival,
                          meta.id + " (request " + std::to_string(job->request().id) + ")");
  if (chat) reader.on_complete([&ctx, &tok, &p, &rendered, job](const TextOutput& out, const std::vector<int64_t>& reply) {
    remember_turn(ctx, tok, p, rendered, job->request().prompt_ids, out, reply);
  });
  const auto deadline = arrival + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(ctx.options.request_timeout_s));
  auto timed_out = [&] {
    ctx.metrics.count_request(504);  // counted before the engine can let the sequence go
    reader.cancel("timeout");
    reply_error(ex, ApiError{504, "the request ran longer than --request-timeout", "timeout", "", "timeout"});
  };
  // The next event, looking at the connection every kPeerPoll (events or
  // not); a timeout step at the deadline, or `gone` when the client left.
  bool gone = false;
  auto next_peer_check = Clock::now() + kPeerPoll;
  auto wait = [&]() -> Step {
    for (;;) {
      Step st = reader.next(std::min(deadline, next_peer_check));
      const auto now = Clock::now();
      if (now >= next_peer_check) {
        next_peer_check = now + kPeerPoll;
        if (!ex.peer_alive()) {
          gone = true;
          return st;
        }
      }
      if (!st.timeout || now >= deadline) return st;
    }
  };
  auto client_gone = [&] {
    ctx.metrics.count_request(499);  // counted before the engine can let the sequence go
    reader.cancel("client disconnected");
    ex.drop();
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
    HttpResponse res;
    res.body = completion_json(meta, reader.text().content(), reader.text().reasoning(), st.finish_reason,
                               reader.usage());
    ex.respond(res);
    ctx.metrics.count_request(200);
    return;
  }
  stream_events(ctx, ex, meta, reader, std::move(first), p.include_usage, deadline);
}

}  // namespace kern::run::serve
