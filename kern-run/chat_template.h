// Qwen3's chat template (the Jinja template in Qwen3's tokenizer_config.json)
// written out by hand: kern-run does not evaluate Jinja. It renders
// multi-turn histories of system, user, assistant and tool turns as the
// template does, including its rule that assistant turns before the last user
// query lose their <think> content. Tool definitions and assistant tool calls
// (the template's `tools` and `tool_calls` branches) are not supported here;
// callers refuse them before rendering. Checked against HF's own template text
// rendered by @huggingface/jinja (test/run/chat_template_oracle.mjs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {

/// One turn of a chat history (OpenAI's `messages[i]`, text content only).
struct ChatMessage {
  std::string role;  ///< "system", "user", "assistant" or "tool"
  std::string content;
  /// An assistant turn's reasoning (vLLM's `reasoning_content`). nullopt: the
  /// template takes the reasoning from a `<think>…</think>` in `content`
  /// instead. Ignored for other roles.
  std::optional<std::string> reasoning_content;
};

/// The template's variables besides `messages`.
struct ChatTemplateOptions {
  bool add_generation_prompt = true;  ///< end with "<|im_start|>assistant\n"
  /// false: after the generation prompt, the empty think block
  /// "<think>\n\n</think>\n\n" (the template's enable_thinking=False).
  bool enable_thinking = true;
  /// true: every assistant turn keeps its think block (empty when it has no
  /// reasoning), as the template renders the turns after the last query, so
  /// a resent conversation renders each earlier reply as its generation
  /// prompt and reply were: the history is a prefix of the next prompt and
  /// hits the prefix cache (kern-run serve; docs/serving.md "Prefix
  /// caching"). false: the template's own rule (earlier assistant turns
  /// lose their reasoning and think block).
  bool stable_history = false;
};

/// The templated text of `messages`, as apply_chat_template(messages,
/// add_generation_prompt, enable_thinking) renders it with Qwen3's template.
/// A first system turn leads; later system turns render in place; earlier
/// assistant turns keep only their answer (the part after `</think>`), while
/// assistant turns after the last user query keep their reasoning in a think
/// block. Errors (kUsage): an empty history; an unknown role, naming
/// "messages[i].role" and the value.
Result<std::string> render_qwen3_messages(const std::vector<ChatMessage>& messages,
                                          const ChatTemplateOptions& options);

/// One chat prompt (kern-run --chat: an optional system turn and one user turn).
struct ChatPrompt {
  std::optional<std::string> system;  ///< nullopt: no system turn (the template then emits none)
  std::string user;
  bool empty_think = false;  ///< append "<think>\n\n</think>\n\n" (the template's enable_thinking=False)
};

/// The templated text, as apply_chat_template(add_generation_prompt=True)
/// renders it:
/// "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
/// (the system turn only when given), then the empty think block when asked.
/// render_qwen3_messages over those one or two turns.
std::string render_qwen3_chat(const ChatPrompt& prompt);

/// Qwen3's end tokens that stop generation: the ids of `<|im_end|>` and
/// `<|endoftext|>` that `tokenizer` has (either may be absent: then fewer).
std::vector<int64_t> qwen3_end_token_ids(const tok::Tokenizer& tokenizer);

}  // namespace kern::run
