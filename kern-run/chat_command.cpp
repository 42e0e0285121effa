// kern-run --chat --interactive on stdin and stdout (chat_command.h).
#include "kern-run/chat_command.h"

#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <string>

#include "kern-engine/engine.h"
#include "kern-engine/request.h"
#include "kern-run/chat_repl.h"
#include "kern-run/chat_template.h"
#include "kern-run/generation_config.h"
#include "kern-run/cli_errors.h"
#include "kern-run/end_tokens.h"
#include "kern-run/load_model.h"
#include "kern-run/progress.h"
#include "kern-run/sampling_options.h"
#include "kern-run/prompt_input.h"
#include "kern-run/stream_output.h"
#include "kern-run/tokenizer/tokenizer.h"
#include "kern-run/weights_hint.h"
#include "spdlog/spdlog.h"

namespace kern::run {
namespace {

/// Set by the SIGINT handler; read and cleared by the loop.
volatile std::sig_atomic_t g_interrupt = 0;

void on_sigint(int) { g_interrupt = 1; }

bool take_interrupt() {
  if (g_interrupt == 0) return false;
  g_interrupt = 0;
  return true;
}

/// Installs on_sigint for SIGINT (SA_RESTART: writes and reads resume;
/// poll, which is never restarted, reports it at the prompt) and restores
/// the previous action when destroyed.
class SigintScope {
 public:
  SigintScope() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    installed_ = ::sigaction(SIGINT, &sa, &old_) == 0;
  }
  ~SigintScope() {
    if (installed_) ::sigaction(SIGINT, &old_, nullptr);
  }
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;

 private:
  struct sigaction old_ {};
  bool installed_ = false;
};

/// Lines of stdin, read with poll + read so that a Ctrl-C while waiting is
/// seen at once (interrupted() then true).
class StdinLines {
 public:
  /// The next line without its "\n" (and a "\r" before it), the last
  /// unterminated line at the end, or nullopt at the end of input or on an
  /// interrupt.
  std::optional<std::string> next() {
    while (true) {
      if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return line;
      }
      if (eof_) {
        if (buffer_.empty()) return std::nullopt;
        std::string line;
        line.swap(buffer_);
        return line;
      }
      if (take_interrupt()) {
        interrupted_ = true;
        return std::nullopt;
      }
      pollfd p{STDIN_FILENO, POLLIN, 0};
      if (::poll(&p, 1, -1) < 0) {
        if (errno == EINTR) continue;  // the interrupt flag is checked above
        eof_ = true;
        continue;
      }
      char chunk[4096];
      const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) eof_ = true;
      else buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  bool interrupted() const { return interrupted_; }

 private:
  std::string buffer_;
  bool eof_ = false;
  bool interrupted_ = false;
};

Status check_options(const RunOptions& o) {
  auto usage = [](const std::string& m) { return make_error(ErrorKind::kUsage, m); };
  if (!o.chat) return usage("--interactive needs --chat (a conversation in Qwen3's chat template)");
  if (o.tokenizer_path.empty()) return usage("--interactive needs --tokenizer tokenizer.json (messages are text)");
  if (o.prompt_ids || o.prompt_text || !o.prompt_file.empty())
    return usage("--interactive reads its messages from stdin: give no --prompt, --prompt-file or --prompt-ids");
  if (o.json) return usage("--interactive streams text: --json is for single runs");
  if (!o.dumps.empty()) return usage("--interactive does not take --dump-buffer");
  if (o.spec) return usage("--interactive does not run speculative decoding (--spec): the draft's context is not "
                           "kept in the prefix cache");
  return {};
}

Status run_chat(const RunOptions& o, int& exit_code) {
  KERN_RETURN_IF_ERROR(check_options(o));
  KERN_ASSIGN_OR_RETURN(auto opened, open_plan_for(o.plan_path, false));
  const engine::CausalLmContract c = opened.contract;
  KERN_ASSIGN_OR_RETURN(auto tokenizer, tok::Tokenizer::load(o.tokenizer_path), "--tokenizer");
  KERN_RETURN_IF_ERROR(check_chat_tokens(tokenizer, "--chat"));
  const uint64_t capacity = o.capacity.value_or(engine::default_capacity(c));
  KERN_RETURN_IF_ERROR(engine::check_capacity(c, capacity), "--capacity");
  KERN_RETURN_IF_ERROR(engine::check_token_ids(o.load.end_ids, c.vocab, "end"), kGenerationEndIdsContext);
  KERN_RETURN_IF_ERROR(engine::check_token_ids(o.stop_ids, c.vocab, "stop"), "--stop-ids");
  KERN_ASSIGN_OR_RETURN(auto sampling, sampling_from_options(o));
  if (!sampling.greedy() && c.sampling_rows == 0)
    return make_error(ErrorKind::kUsage, "--temperature needs a plan whose decode program samples; this one has no "
                                         "sampling inputs (sample_temperature ...): regenerate its manifest with "
                                         "examples/gen_qwen3_manifest.py");
  ProgressLine progress(stderr, isatty(STDERR_FILENO) != 0);
  auto loaded = load_model(std::move(opened), o.load, capacity, &progress);
  if (!loaded.ok()) return with_weights_next_step(loaded.error(), o.plan_path, o.load.weights_path);
  auto model = std::move(loaded.value());
  engine::Engine engine(*model);
  // The prefix cache keeps the conversation's pages between turns; it needs
  // decode_batch and the asynchronous loop (the batched engine).
  const bool prefix_cache = o.prefix_cache && !o.sync && model->batch() != nullptr;
  KERN_RETURN_IF_ERROR(engine.set_max_batch(1, prefix_cache));
  if (o.prefix_cache && !prefix_cache)
    spdlog::info("chat: prefix cache off ({}): each turn prefills the whole conversation",
                 o.sync ? "--sync runs one sequence without the batched engine" : "the plan has no decode_batch");

  ChatReplSettings settings;
  settings.system = o.system;
  settings.no_think = o.no_think;
  settings.steps = o.steps;
  settings.chunk = o.chunk;
  settings.sync = o.sync;
  settings.sampling = sampling;
  settings.stop_ids = stop_ids_for(o, &tokenizer);
  // A tokenizer's end token beyond a smaller embedding can never be generated.
  std::erase_if(settings.stop_ids, [&c](int64_t id) { return id < 0 || static_cast<uint64_t>(id) >= c.vocab; });
  settings.end_ids = end_token_ids(tokenizer);
  settings.max_capacity = c.max_capacity();

  // The "> " prompt and the help line only in a terminal session (stdin and
  // stdout both terminals): piped replies stay plain text.
  const bool tty = isatty(STDIN_FILENO) != 0 && isatty(STDOUT_FILENO) != 0;
  SigintScope sigint;
  StdinLines lines;
  ChatReplIo io;
  io.out = stdout;
  io.note = [](const std::string& m) { std::fprintf(stderr, "kern-run: %s\n", m.c_str()); };
  io.interrupted = take_interrupt;
  io.read_message = [&]() -> std::optional<std::string> {
    if (tty) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    auto line = lines.next();
    // A line ending in '\' continues on the next one (llama-cli's multi-line input).
    while (line && !line->empty() && line->back() == '\\') {
      line->back() = '\n';
      auto more = lines.next();
      if (!more) break;
      *line += *more;
    }
    if (!line && tty && !lines.interrupted()) std::fputs("\n", stdout);  // Ctrl-D: end the prompt's line
    return line;
  };
  if (tty)
    std::fprintf(stderr, "kern-run: chat: type a message and press Enter (a line ending in \\ continues); "
                         "/exit or Ctrl-D ends; Ctrl-C stops a reply\n");
  KERN_ASSIGN_OR_RETURN(auto outcome, run_chat_repl(engine, tokenizer, settings, io));
  spdlog::info("chat: {} replies, {} messages refused, {} interrupted, {} tokens in the conversation",
               outcome.replies, outcome.refused, outcome.interrupted, outcome.cached_tokens);
  if (lines.interrupted()) {
    if (tty) std::fputs("\n", stdout);
    exit_code = 130;  // ended by Ctrl-C at the prompt, as a shell reports SIGINT
  }
  return flush_stdout();
}

}  // namespace

int run_chat_command(const RunOptions& options) {
  int exit_code = 0;
  Status s = run_chat(options, exit_code);
  return s.ok() ? exit_code : fail(s.error());
}

}  // namespace kern::run
