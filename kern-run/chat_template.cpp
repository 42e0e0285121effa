// Qwen3's chat template, multi-turn (chat_template.h). Each step names the
// template line it follows; Python string semantics (split, strip) are spelled
// out where the template relies on them.
#include "kern-run/chat_template.h"

#include <string_view>

namespace kern::run {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
std::string lstrip_nl(std::string_view s) {
  size_t i = s.find_first_not_of('\n');
  return i == std::string_view::npos ? std::string() : std::string(s.substr(i));
}
std::string rstrip_nl(std::string_view s) {
  size_t i = s.find_last_not_of('\n');
  return i == std::string_view::npos ? std::string() : std::string(s.substr(0, i + 1));
}
std::string strip_nl(std::string_view s) { return lstrip_nl(rstrip_nl(s)); }

// A user turn that only carries a tool's result does not count as a query
// (the template's multi_step_tool scan).
bool is_tool_response(const std::string& content) {
  return starts_with(content, "<tool_response>") && ends_with(content, "</tool_response>");
}

struct Split {
  std::string content;
  std::string reasoning;
};

// content.split('</think>')[-1].lstrip('\n') and
// content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n').
Split split_think(const ChatMessage& m) {
  if (m.reasoning_content) return {m.content, *m.reasoning_content};
  size_t last_close = m.content.rfind("</think>");
  if (last_close == std::string::npos) return {m.content, ""};
  Split s;
  s.content = lstrip_nl(std::string_view(m.content).substr(last_close + 8));
  std::string before = rstrip_nl(std::string_view(m.content).substr(0, m.content.find("</think>")));
  size_t open = before.rfind("<think>");
  s.reasoning = lstrip_nl(open == std::string::npos ? std::string_view(before)
                                                    : std::string_view(before).substr(open + 7));
  return s;
}

}  // namespace

Result<std::string> render_qwen3_messages(const std::vector<ChatMessage>& messages,
                                          const ChatTemplateOptions& options) {
  if (messages.empty()) return make_error(ErrorKind::kUsage, "messages: at least one message is needed");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      return make_error(ErrorKind::kUsage, "messages[" + std::to_string(i) + "].role: '" + r +
                                               "' is not one of system, user, assistant, tool");
  }
  const size_t n = messages.size();
  std::string out;
  if (messages[0].role == "system") out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";

  // The last user turn that is a real query (scanning backwards).
  size_t last_query = n - 1;
  for (size_t k = n; k-- > 0;) {
    if (messages[k].role == "user" && !is_tool_response(messages[k].content)) {
      last_query = k;
      break;
    }
  }

  for (size_t i = 0; i < n; ++i) {
    const ChatMessage& m = messages[i];
    const bool last = i + 1 == n;
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      Split s = split_think(m);
      if (options.stable_history || (i > last_query && (last || !s.reasoning.empty())))
        out += "<|im_start|>assistant\n<think>\n" + strip_nl(s.reasoning) + "\n</think>\n\n" + lstrip_nl(s.content);
      else
        out += "<|im_start|>assistant\n" + s.content;
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (last || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!options.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

std::string render_qwen3_chat(const ChatPrompt& prompt) {
  std::vector<ChatMessage> messages;
  if (prompt.system) messages.push_back({"system", *prompt.system, std::nullopt});
  messages.push_back({"user", prompt.user, std::nullopt});
  // Cannot fail: the history is non-empty and its roles are known.
  return render_qwen3_messages(messages, {true, !prompt.empty_think}).value();
}

std::vector<int64_t> qwen3_end_token_ids(const tok::Tokenizer& tokenizer) {
  std::vector<int64_t> ids;
  for (const char* token : {"<|im_end|>", "<|endoftext|>"})
    if (auto id = tokenizer.token_to_id(token)) ids.push_back(*id);
  return ids;
}

}  // namespace kern::run
