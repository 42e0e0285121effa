// The conversation loop of kern-run --chat --interactive (llama-cli's
// conversation mode) on the engine: read a user message, stream the reply,
// keep the conversation (chat_session.h), until the input ends or "/exit".
// Each turn's request is the whole conversation; an engine with the prefix
// cache on (Engine::set_max_batch(1, true), kern-run's default) maps what
// earlier turns left in the KV pool and prefills only the rest. Terminal handling (the prompt, stdin, Ctrl-C) is the
// caller's, behind ChatReplIo, so the loop runs in tests on a model without
// a terminal.
//
// Behaviour per message: a message of only whitespace is skipped; "/exit"
// ends the conversation; text that is not UTF-8 is reported and skipped.
// Each reply is at most `steps` ids and never runs past the capacity: a
// message that leaves no room for one id is refused with the tokens left
// (the conversation stays usable for a shorter one), and a reply cut by the
// capacity says so. An interrupt while a reply streams stops it; the ids so
// far stay in the conversation.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-engine/engine.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {

/// What the loop reads and where it writes (all borrowed or called on the
/// loop's thread).
struct ChatReplIo {
  /// The next user message (a line; the caller joins continued lines), or
  /// nullopt at the end of input.
  std::function<std::optional<std::string>()> read_message;
  std::FILE* out = nullptr;  ///< replies, streamed (stdout)
  /// Lines for the user (stderr in kern-run: "kern-run: ..."), without a
  /// newline.
  std::function<void(const std::string&)> note;
  /// Whether an interrupt (Ctrl-C) came since the last call; consumes it.
  /// Polled after every engine step while a reply streams. May be empty.
  std::function<bool()> interrupted;
};

/// How replies are generated.
struct ChatReplSettings {
  std::optional<std::string> system;  ///< a system turn before the first message
  bool no_think = false;              ///< the empty think block after each generation prompt
  uint64_t steps = 128;               ///< most ids per reply
  uint64_t chunk = 512;               ///< prefill chunk
  bool sync = false;                  ///< the synchronous decode loop
  /// How reply ids are picked (greedy by default). One seed for the whole
  /// conversation: a draw is counted by its position, and positions never
  /// repeat within a conversation, so no two replies reuse a random number.
  engine::SamplingParams sampling;
  std::vector<int64_t> stop_ids;      ///< ids that end a reply (Qwen3's end tokens; empty with --ignore-eos)
  std::vector<int64_t> end_ids;       ///< Qwen3's end tokens (close a reply in the history)
  uint64_t max_capacity = 0;          ///< the plan's largest capacity (the message's hint; 0: none)
};

/// What the conversation did.
struct ChatReplOutcome {
  uint64_t replies = 0;      ///< replies generated (interrupted ones included)
  uint64_t refused = 0;      ///< messages refused (not UTF-8, over the capacity)
  uint64_t interrupted = 0;  ///< replies stopped by an interrupt
  uint64_t cached_tokens = 0;  ///< tokens in the conversation at the end
  std::vector<uint64_t> reply_tokens;  ///< ids generated per reply, in order (an end id included)
  /// Per reply: the conversation's tokens the engine's prefix cache mapped (0 with the cache off).
  std::vector<uint64_t> prompt_cached_tokens;
};

/// Runs the conversation on `engine` (idle; its Model's capacity bounds
/// it). Errors: a failed generation (the engine's error) or a failed write
/// of `io.out` (kIo): the conversation ends with it.
Result<ChatReplOutcome> run_chat_repl(engine::Engine& engine, const tok::Tokenizer& tokenizer,
                                      const ChatReplSettings& settings, ChatReplIo& io);

}  // namespace kern::run
