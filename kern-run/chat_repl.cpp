// The conversation loop of kern-run --chat --interactive (chat_repl.h).
#include "kern-run/chat_repl.h"

#include <algorithm>

#include "kern-run/chat_session.h"
#include "kern-run/stream_output.h"

namespace kern::run {
namespace {

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

/// "; raise --capacity (this plan holds up to M tokens)" or "".
std::string raise_capacity(const ChatReplSettings& s, uint64_t capacity) {
  if (s.max_capacity <= capacity) return "";
  return ", or raise --capacity (this plan holds up to " + std::to_string(s.max_capacity) + " tokens)";
}

}  // namespace

Result<ChatReplOutcome> run_chat_repl(engine::Engine& engine, const tok::Tokenizer& tokenizer,
                                      const ChatReplSettings& settings, ChatReplIo& io) {
  ChatSession session(tokenizer, settings.system, settings.no_think, settings.end_ids);
  ChatReplOutcome outcome;
  // The batched engine (the prefix cache) holds whole pages of the pool.
  const uint64_t capacity = engine.max_sequence_tokens();
  auto note = [&io](const std::string& m) {
    if (io.note) io.note(m);
  };
  engine::RequestId next_id = 1;
  while (auto message = io.read_message()) {
    if (blank(*message)) continue;
    if (*message == "/exit") break;
    auto turn = session.next_turn(*message);
    if (!turn.ok()) {
      note("error: " + turn.error().message + "; message skipped");
      ++outcome.refused;
      continue;
    }
    const uint64_t room = capacity - std::min(capacity, turn->start_pos);
    if (turn->ids.size() >= room) {
      note("error: the conversation is full: this message needs " + std::to_string(turn->ids.size()) +
           " tokens and a reply at least 1, " + std::to_string(room) + " of the capacity " +
           std::to_string(capacity) + " tokens are left; send a shorter message, or /exit and start a new "
           "conversation" + raise_capacity(settings, capacity));
      ++outcome.refused;
      continue;
    }
    engine::Request r;
    r.id = next_id++;
    // The whole conversation: the engine's prefix cache (when on) maps the
    // full pages of what earlier turns left, and prefills the rest.
    r.prompt_ids = turn->conversation;
    r.max_tokens = std::min<uint64_t>(settings.steps, room - turn->ids.size());
    r.stop_ids = settings.stop_ids;
    r.chunk = settings.chunk;
    r.sync = settings.sync;
    r.sampling = settings.sampling;
    KERN_RETURN_IF_ERROR(engine.add_request(r));
    StreamPrinter printer(&tokenizer, settings.stop_ids, io.out, nullptr,
                          [&note](const std::string& w) { note("warning: " + w); });
    std::vector<int64_t> reply;
    uint64_t cached = 0;
    bool aborted = false, finished = false, stopped = false;
    Status failure;
    while (!finished) {
      KERN_ASSIGN_OR_RETURN(auto events, engine.step());
      for (const engine::TokenEvent& ev : events) {
        if (ev.id != r.id) continue;
        cached = ev.cached_tokens;
        for (int64_t id : ev.ids) {
          reply.push_back(id);
          printer.on_token(id);
        }
        if (ev.finished) {
          finished = true;
          stopped = *ev.finished == engine::FinishReason::kStop;
          if (ev.error) failure = *ev.error;
        }
      }
      if (!printer.status().ok() && !finished && !aborted) {
        engine.abort(r.id);
        aborted = true;
      }
      if (io.interrupted && io.interrupted() && !aborted) {
        // A Ctrl-C in the step that ended the reply counts for it too.
        if (!finished) engine.abort(r.id);
        aborted = true;
      }
      if (events.empty() && !finished) return make_error(ErrorKind::kUsage, "the engine has no work for the reply");
    }
    printer.finish();
    KERN_RETURN_IF_ERROR(failure);
    KERN_RETURN_IF_ERROR(printer.status());
    ++outcome.replies;
    outcome.reply_tokens.push_back(reply.size());
    outcome.prompt_cached_tokens.push_back(cached);
    session.add_reply(*turn, reply);
    if (aborted) {
      ++outcome.interrupted;
      note("interrupted: the reply so far (" + std::to_string(reply.size()) + " tokens) stays in the conversation");
    } else if (!stopped && reply.size() == r.max_tokens && r.max_tokens < settings.steps) {
      note("the reply reached the capacity (" + std::to_string(capacity) +
           " tokens): the conversation is full; /exit and start a new one" + raise_capacity(settings, capacity));
    }
  }
  outcome.cached_tokens = session.cached_tokens();
  return outcome;
}

}  // namespace kern::run
