// Qwen3's chat template (the Jinja template in Qwen3's tokenizer_config.json)
// for one system + user turn and the assistant's generation prompt, written
// out by hand: kern-run does not evaluate Jinja. Tool calls and multi-turn
// histories (which the template also handles) are not supported here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {

/// One chat prompt.
struct ChatPrompt {
  std::optional<std::string> system;  ///< nullopt: no system turn (the template then emits none)
  std::string user;
  bool empty_think = false;  ///< append "<think>\n\n</think>\n\n" (the template's enable_thinking=False)
};

/// The templated text, as apply_chat_template(add_generation_prompt=True)
/// renders it:
/// "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
/// (the system turn only when given), then the empty think block when asked.
std::string render_qwen3_chat(const ChatPrompt& prompt);

/// Qwen3's end tokens that stop generation: the ids of `<|im_end|>` and
/// `<|endoftext|>` that `tokenizer` has (either may be absent: then fewer).
std::vector<int64_t> qwen3_end_token_ids(const tok::Tokenizer& tokenizer);

}  // namespace kern::run
