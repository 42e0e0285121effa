// The ids side of a multi-turn conversation kept as one sequence (chat_session.h).
#include "kern-run/chat_session.h"

#include "kern-engine/request.h"
#include "kern-run/chat_template.h"

namespace kern::run {

ChatSession::ChatSession(const tok::Tokenizer& tokenizer, std::optional<std::string> system, bool no_think,
                         std::vector<int64_t> end_ids)
    : tokenizer_(tokenizer), system_(std::move(system)), no_think_(no_think), end_ids_(std::move(end_ids)) {}

Result<ChatTurn> ChatSession::next_turn(const std::string& text) const {
  // Check the user's text first, so an offset names a byte of it, not of the template.
  if (const size_t bad = tok::find_invalid_utf8(text); bad != text.size())
    return make_error(ErrorKind::kUsage, "the message: encode: text is not valid UTF-8 at byte " + std::to_string(bad));
  std::vector<ChatMessage> messages;
  if (turns_ == 0 && system_) messages.push_back({"system", *system_, std::nullopt});
  messages.push_back({"user", text, std::nullopt});
  ChatTemplateOptions options;
  options.enable_thinking = !no_think_;
  KERN_ASSIGN_OR_RETURN(std::string rendered, render_qwen3_messages(messages, options));
  if (open_reply_) rendered = "<|im_end|>\n" + rendered;  // closes the previous reply
  KERN_ASSIGN_OR_RETURN(auto encoded, tokenizer_.encode(rendered), "the message");
  ChatTurn turn;
  turn.start_pos = cached_;
  if (pending_) turn.ids.push_back(*pending_);
  turn.ids.insert(turn.ids.end(), encoded.begin(), encoded.end());
  turn.conversation = history_;
  turn.conversation.insert(turn.conversation.end(), turn.ids.begin(), turn.ids.end());
  return turn;
}

void ChatSession::add_reply(const ChatTurn& turn, const std::vector<int64_t>& reply) {
  // Interrupted before its first id: the turn may be only partly prefilled;
  // the conversation stays as it was (the next turn overwrites that KV).
  if (reply.empty()) return;
  ++turns_;
  open_reply_ = true;
  // The turn's ids are in the KV cache (the last one through decode); so
  // are the reply's ids but the last one.
  cached_ = turn.start_pos + turn.ids.size() + reply.size() - 1;
  history_ = turn.conversation;
  history_.insert(history_.end(), reply.begin(), reply.end() - 1);
  pending_.reset();
  if (!engine::is_stop_id(end_ids_, reply.back())) pending_ = reply.back();
}

}  // namespace kern::run
