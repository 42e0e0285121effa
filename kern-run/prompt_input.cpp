// Where kern-run's prompt comes from (prompt_input.h).
#include "kern-run/prompt_input.h"
#include "kern-engine/clock.h"

#include <unistd.h>

#include <chrono>

#include "common/file_util.h"
#include "kern-run/chat_template.h"
#include "kern-run/end_tokens.h"
#include "kern-run/tokenizer/utf8.h"

namespace kern::run {

Result<std::string> read_prompt_text(const RunOptions& o) {
  if (o.prompt_text) return *o.prompt_text;
  // kern::read_stdin: capped; a closed stdin is a usage error (exit 2), not an empty prompt.
  if (o.prompt_file == "-") return read_stdin();
  if (!o.prompt_file.empty()) {
    KERN_ASSIGN_OR_RETURN(auto bytes, read_file(o.prompt_file), "--prompt-file");
    return bytes;
  }
  if (isatty(STDIN_FILENO))
    return make_error(ErrorKind::kUsage,
                      "no prompt: give --prompt TEXT, --prompt-file F, --prompt-ids IDS or pipe the text to stdin");
  return read_stdin();
}

Result<Prompt> build_prompt(const RunOptions& o, const tok::Tokenizer* tokenizer) {
  Prompt p;
  if (o.prompt_ids) {
    p.ids = *o.prompt_ids;
    return p;
  }
  KERN_ASSIGN_OR_RETURN(auto text, read_prompt_text(o));
  p.text = std::move(text);
  // With --chat the template wraps the text: check the user's own bytes
  // first, so an offset names a byte of their file, not of the template.
  if (o.chat) {
    if (tokenizer != nullptr) KERN_RETURN_IF_ERROR(check_chat_tokens(*tokenizer, "--chat"));
    const std::string_view system = o.system ? std::string_view(*o.system) : std::string_view();
    for (const auto& [what, s] : {std::pair<const char*, std::string_view>{"the prompt", p.text},
                                  std::pair<const char*, std::string_view>{"the --system text", system}}) {
      if (const size_t bad = tok::find_invalid_utf8(s); bad != s.size()) {
        return make_error(ErrorKind::kUsage,
                          std::string(what) + ": encode: text is not valid UTF-8 at byte " + std::to_string(bad));
      }
    }
  }
  p.templated_text = o.chat ? render_qwen3_chat({o.system, p.text, o.no_think}) : p.text;
  auto t0 = engine::Clock::now();
  auto ids = tokenizer->encode(p.templated_text);
  p.tokenize_ms = engine::ms_since(t0);
  KERN_RETURN_IF_ERROR(ids, "the prompt");
  p.ids.assign(ids->begin(), ids->end());
  return p;
}

std::vector<int64_t> stop_ids_for(const RunOptions& o, const tok::Tokenizer* tokenizer) {
  std::vector<int64_t> ids = o.stop_ids;
  if (o.ignore_eos) return ids;
  for (int64_t id : end_ids(tokenizer, o.load.end_ids)) ids.push_back(id);
  return ids;
}

}  // namespace kern::run
