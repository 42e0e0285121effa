// Qwen3's chat template for one system + user turn (chat_template.h).
#include "kern-run/chat_template.h"

namespace kern::run {

std::string render_qwen3_chat(const ChatPrompt& prompt) {
  std::string out;
  if (prompt.system) out += "<|im_start|>system\n" + *prompt.system + "<|im_end|>\n";
  out += "<|im_start|>user\n" + prompt.user + "<|im_end|>\n";
  out += "<|im_start|>assistant\n";
  if (prompt.empty_think) out += "<think>\n\n</think>\n\n";
  return out;
}

std::vector<int64_t> qwen3_end_token_ids(const tok::Tokenizer& tokenizer) {
  std::vector<int64_t> ids;
  for (const char* token : {"<|im_end|>", "<|endoftext|>"})
    if (auto id = tokenizer.token_to_id(token)) ids.push_back(*id);
  return ids;
}

}  // namespace kern::run
