// The tokenizer-only text conventions of kern-run (end_tokens.h): end tokens by
// name, and the check that a tokenizer fits the chat template kern renders.
#include "kern-run/end_tokens.h"

#include <algorithm>
#include <string>

namespace kern::run {

std::vector<int64_t> end_token_ids(const tok::Tokenizer& tokenizer) {
  std::vector<int64_t> ids;
  for (const char* token : {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"})
    if (auto id = tokenizer.token_to_id(token)) ids.push_back(*id);
  return ids;
}

std::vector<int64_t> end_ids(const tok::Tokenizer* tokenizer, std::span<const int64_t> model_end_ids) {
  std::vector<int64_t> ids = tokenizer != nullptr ? end_token_ids(*tokenizer) : std::vector<int64_t>();
  for (int64_t id : model_end_ids)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

Status check_chat_tokens(const tok::Tokenizer& tokenizer, std::string_view what) {
  for (const char* token : {"<|im_start|>", "<|im_end|>", "<think>", "</think>"}) {
    if (!tokenizer.token_to_id(token)) {
      return make_error(ErrorKind::kUsage,
                        std::string(what) + ": kern renders Qwen3's chat template (ChatML with <think> blocks), and "
                                            "this tokenizer has no " + token + " token: this model's chat format is "
                                            "not supported; give the prompt as plain text (a completion) instead");
    }
  }
  return Status::ok_status();
}

}  // namespace kern::run
