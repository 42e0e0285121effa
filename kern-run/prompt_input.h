// Where kern-run's prompt comes from: --prompt-ids, or text from --prompt,
// --prompt-file or stdin, optionally wrapped in the chat template and
// encoded with the tokenizer. The ids are checked against the model later
// (check_request), whatever their source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-run/cli_options.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {

/// The prompt as text (what was read, before any template) and as ids.
struct Prompt {
  std::string text;  ///< empty for --prompt-ids
  std::string templated_text;  ///< what was encoded (text, or the chat-templated text)
  std::vector<int64_t> ids;
  double tokenize_ms = 0;  ///< encode wall time
};

/// Reads the prompt text: --prompt, else --prompt-file (a path, or "-" for
/// stdin), else stdin unless it is a terminal. Bytes are kept exactly (no
/// newline stripped). Errors: kIo naming the file; kUsage when stdin is a
/// terminal and no prompt option was given.
Result<std::string> read_prompt_text(const RunOptions& o);

/// Builds the prompt: --prompt-ids as given, or the text read by
/// read_prompt_text, chat-templated when o.chat, encoded by `tokenizer`
/// (null only with --prompt-ids). Errors: read_prompt_text's; encode's
/// (kUsage, invalid UTF-8 with its byte offset).
Result<Prompt> build_prompt(const RunOptions& o, const tok::Tokenizer* tokenizer);

/// The ids that end generation: --stop-ids, then Qwen3's end tokens
/// (end_token_ids) when a tokenizer is given and not --ignore-eos
/// (ids in, ids out without --stop-ids: generation runs for --steps).
std::vector<int64_t> stop_ids_for(const RunOptions& o, const tok::Tokenizer* tokenizer);

}  // namespace kern::run
