// A multi-turn conversation kept as one sequence (kern-run --chat
// --interactive, llama-cli's conversation mode): the KV cache holds every
// earlier turn, so each turn feeds only its new tokens. This file is the
// ids side, without a model: which ids a new user turn adds and where they
// start, given what the previous reply generated.
//
// The text fed is what Qwen3's chat template renders for the conversation,
// turn by turn: the first turn is render_qwen3_messages(system?, user) with
// the generation prompt; each later one closes the reply with "<|im_end|>\n"
// and adds render_qwen3_messages(user) with the generation prompt. This
// differs from re-rendering the whole history with the template in one
// way: the template drops the <think> content of assistant turns before the
// last user query, while the conversation keeps it (it is already in the KV
// cache; llama-cli does the same). Each piece is encoded on its own; the
// chat tokens split the text the same way, so the ids equal those of
// encoding the concatenated text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {

/// The ids one user turn adds, and where they go.
struct ChatTurn {
  std::vector<int64_t> ids;  ///< the turn's new ids, after start_pos tokens of the conversation
  uint64_t start_pos = 0;    ///< tokens of the conversation before them
  /// The whole conversation's ids for this turn's request (the engine's
  /// prompt_ids from position 0): start_pos earlier ones, then `ids`. The
  /// engine's prefix cache maps the earlier ones' full pages.
  std::vector<int64_t> conversation;
};

class ChatSession {
 public:
  /// `tokenizer` is borrowed (must outlive the session). `system`: an
  /// optional system turn before the first user turn; `no_think`: each
  /// generation prompt gets the empty think block (enable_thinking=False);
  /// `end_ids`: the ids that end a reply (Qwen3's end tokens).
  ChatSession(const tok::Tokenizer& tokenizer, std::optional<std::string> system, bool no_think,
              std::vector<int64_t> end_ids);

  /// The ids of user turn `text` (UTF-8). Errors (kUsage): `text` is not
  /// valid UTF-8 ("the message: encode: text is not valid UTF-8 at byte N",
  /// the offset in `text`). Nothing changes until add_reply.
  Result<ChatTurn> next_turn(const std::string& text) const;

  /// Records that `turn` ran and generated `reply` (possibly cut short: by
  /// the steps, the capacity or an interrupt). The KV cache then holds the
  /// turn and every reply id but the last, which the next turn feeds unless
  /// it is an end id (then the next turn's "<|im_end|>" closes the reply
  /// instead). An empty reply (interrupted before its first id) leaves the
  /// conversation as it was: that turn is forgotten.
  void add_reply(const ChatTurn& turn, const std::vector<int64_t>& reply);

  /// Tokens of the conversation before the next turn's new ids (its start_pos).
  uint64_t cached_tokens() const { return cached_; }
  /// User turns recorded so far.
  uint64_t turns() const { return turns_; }

 private:
  const tok::Tokenizer& tokenizer_;
  std::optional<std::string> system_;
  bool no_think_;
  std::vector<int64_t> end_ids_;
  uint64_t cached_ = 0;
  uint64_t turns_ = 0;
  std::vector<int64_t> history_;    ///< the conversation's ids up to cached_ (fed and generated)
  std::optional<int64_t> pending_;  ///< the last reply id, not yet in the KV cache (none after an end id)
  bool open_reply_ = false;         ///< a reply was generated and needs closing
};

}  // namespace kern::run
