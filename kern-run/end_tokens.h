// What kern-run knows of a model's text conventions from its tokenizer
// alone (the plan names no model family): the tokens that end generation,
// and whether the chat template kern renders (Qwen's ChatML,
// chat_template.h) fits the tokenizer.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {

/// The ids of the end-of-turn / end-of-text tokens this tokenizer has, of
/// every family the provider tools convert (docs/running.md "Each family's
/// two commands"): Qwen's `<|im_end|>`, `<|endoftext|>`; Llama 3's
/// `<|eot_id|>`, `<|eom_id|>`, `<|end_of_text|>` (the three ids Llama 3
/// Instruct's config.json lists in `eos_token_id`). In that order; absent
/// tokens are skipped. For a Qwen tokenizer, exactly qwen3_end_token_ids.
std::vector<int64_t> end_token_ids(const tok::Tokenizer& tokenizer);

/// Every id that ends generation: the tokenizer's end tokens (end_token_ids;
/// none without a tokenizer), then the model folder's `model_end_ids`
/// (generation_config.h) not already among them.
std::vector<int64_t> end_ids(const tok::Tokenizer* tokenizer, std::span<const int64_t> model_end_ids);

/// Ok when the tokenizer has the tokens of the chat template kern renders
/// (Qwen3's: ChatML `<|im_start|>`, `<|im_end|>` and the `<think>`,
/// `</think>` of its reasoning blocks); else a usage error naming `what`
/// (e.g. "--chat") and the first missing token, saying that plain
/// completions work. So a Llama 3 tokenizer (no ChatML) and a Qwen2.5 one
/// (ChatML, but its template differs: a default system prompt, no think
/// blocks) are refused rather than rendered in another model's format.
Status check_chat_tokens(const tok::Tokenizer& tokenizer, std::string_view what);

}  // namespace kern::run
