// kern-run --chat --interactive as a process (kern-run/chat_command.h) on
// the tiny Qwen3 with Qwen3's real vocabulary: messages from stdin, one per
// line (a trailing '\' continues), replies streamed to stdout; end of input
// and /exit end it with exit 0, Ctrl-C at the prompt with exit 130; the
// options it cannot take are refused. The first reply equals a plain
// `--chat --prompt` run's text (same templated prompt, same greedy ids, or
// the same seeded draws with the sampling options).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "test/run/cli_runner.h"

using namespace kern::test;
using Catch::Matchers::Contains;

namespace {

std::string chat_args(const std::string& extra) {
  return env_path("KERN_TEXTVOCAB_PLAN") + " --weights " + env_path("KERN_TEXTVOCAB_WEIGHTS") +
         " --device cpu --tokenizer " + env_path("KERN_QWEN3_TOKENIZER_JSON") + " --chat " + extra;
}

}  // namespace

TEST_CASE("kern-run --chat -i answers each line of stdin and ends at /exit or the end of input", "[run][chat]") {
  CliResult single = kern_run(chat_args("--steps 6 --prompt Hello"));
  REQUIRE(single.rc == 0);
  REQUIRE(single.out.size() > 1);
  CliResult chat = kern_run(chat_args("--steps 6 -i"), "Hello\n\n/exit\nnever answered\n");
  INFO(chat.err);
  CHECK(chat.rc == 0);
  CHECK(chat.out == single.out);  // the first turn is the plain --chat prompt; nothing after /exit
  CHECK(chat.err.empty());        // piped: no prompt, no help line, no statistics
  // End of input without /exit, the last line without its newline.
  CliResult eof = kern_run(chat_args("--steps 6 --interactive"), "Hello");
  CHECK(eof.rc == 0);
  CHECK(eof.out == single.out);
  // Two messages: two replies, the second continuing the conversation.
  CliResult two = kern_run(chat_args("--steps 6 -i"), "Hello\nAnd then?\n");
  CHECK(two.rc == 0);
  CHECK(two.out.rfind(single.out, 0) == 0);
  CHECK(std::count(two.out.begin(), two.out.end(), '\n') >= 2);
  CHECK(two.out != single.out + single.out);
}

TEST_CASE("kern-run --chat -i samples with --temperature/--top-k/--top-p/--min-p/--seed, reproducibly by seed",
          "[run][chat][sampling]") {
  const std::string sampling = "--temperature 2 --top-k 50 --top-p 0.95 --min-p 0.01 --seed 7";
  CliResult greedy = kern_run(chat_args("--steps 8 --ignore-eos --prompt Hello"));
  REQUIRE(greedy.rc == 0);
  CliResult single = kern_run(chat_args("--steps 8 --ignore-eos --prompt Hello " + sampling));
  REQUIRE(single.rc == 0);
  CliResult chat = kern_run(chat_args("--steps 8 --ignore-eos -i " + sampling), "Hello\n");
  INFO(chat.err);
  CHECK(chat.rc == 0);
  CHECK(chat.out == single.out);   // the first turn samples as the plain --chat prompt does
  CHECK(chat.out != greedy.out);   // sampled, not greedy
  CHECK(chat.err.empty());         // seeded: no seed line
  CliResult again = kern_run(chat_args("--steps 8 --ignore-eos -i " + sampling), "Hello\n");
  CHECK(again.out == chat.out);
  CliResult other = kern_run(chat_args("--steps 8 --ignore-eos -i --temperature 2 --top-k 50 --top-p 0.95 "
                                       "--min-p 0.01 --seed 8"), "Hello\n");
  CHECK(other.out != chat.out);
  // Without --seed: one is drawn and printed once, and passing it back repeats the conversation.
  CliResult drawn = kern_run(chat_args("--steps 8 --ignore-eos -i --temperature 2"), "Hello\nAnd then?\n");
  REQUIRE(drawn.rc == 0);
  const std::string key = "kern-run: sampling with seed ";
  const size_t at = drawn.err.find(key);
  REQUIRE(at != std::string::npos);
  CHECK(drawn.err.find(key, at + 1) == std::string::npos);
  const std::string seed = drawn.err.substr(at + key.size(), drawn.err.find(' ', at + key.size()) - at - key.size());
  CliResult repeat = kern_run(chat_args("--steps 8 --ignore-eos -i --temperature 2 --seed " + seed),
                              "Hello\nAnd then?\n");
  CHECK(repeat.out == drawn.out);
  // Out of range: refused before the model loads.
  CliResult bad = kern_run(chat_args("-i --temperature 1 --top-p 0"), "Hello\n");
  CHECK(bad.rc == 2);
  CHECK_THAT(bad.err, Contains("--top-p: 0 is out of range: expected a number > 0 and <= 1"));
}

TEST_CASE("kern-run --chat -i joins a line ending in a backslash with the next", "[run][chat]") {
  CliResult single = kern_run(chat_args("--steps 6 --prompt " + shell_quote("two\nlines")));
  REQUIRE(single.rc == 0);
  CliResult chat = kern_run(chat_args("--steps 6 -i"), "two\\\nlines\n");
  CHECK(chat.rc == 0);
  CHECK(chat.out == single.out);
}

TEST_CASE("kern-run --chat -i refuses what a conversation cannot take", "[run][chat]") {
  const std::string plain = env_path("KERN_TEXTVOCAB_PLAN") + " --weights " + env_path("KERN_TEXTVOCAB_WEIGHTS") +
                            " --device cpu --tokenizer " + env_path("KERN_QWEN3_TOKENIZER_JSON");
  const std::pair<std::string, std::string> cases[] = {
      {plain + " -i", "kern-run: error: --interactive needs --chat (a conversation in Qwen3's chat template)\n"},
      {chat_args("-i --prompt hi"),
       "kern-run: error: --interactive reads its messages from stdin: give no --prompt, --prompt-file or "
       "--prompt-ids\n"},
      {chat_args("-i --json"), "kern-run: error: --interactive streams text: --json is for single runs\n"},
      {chat_args("-i --spec"),
       "kern-run: error: --interactive does not run speculative decoding (--spec): the draft's context is not kept "
       "in the prefix cache\n"},
      {env_path("KERN_TEXTVOCAB_PLAN") + " --weights " + env_path("KERN_TEXTVOCAB_WEIGHTS") + " --chat -i",
       "kern-run: error: --interactive needs --tokenizer tokenizer.json (messages are text)\n"},
  };
  for (const auto& [args, err] : cases) {
    INFO(args);
    CliResult r = kern_run(args, "hi\n");
    CHECK(r.rc == 2);
    CHECK(r.err == err);
    CHECK(r.out.empty());
  }
}

TEST_CASE("kern-run --chat -i says when the conversation is full, and goes on", "[run][chat]") {
  CliResult r = kern_run(chat_args("--steps 100 --capacity 32 -i"), "Hello\nmore words than fit now\n");
  CHECK(r.rc == 0);
  CHECK_THAT(r.err, Contains("kern-run: the reply reached the capacity (32 tokens): the conversation is full; /exit "
                             "and start a new one, or raise --capacity (this plan holds up to "));
  CHECK_THAT(r.err, Contains("kern-run: error: the conversation is full: this message needs "));
}

TEST_CASE("Ctrl-C at the prompt of kern-run --chat -i ends it with exit 130", "[run][chat]") {
  const std::string kern_run_path = env_path("KERN_RUN"), plan = env_path("KERN_TEXTVOCAB_PLAN"),
                    weights = env_path("KERN_TEXTVOCAB_WEIGHTS"), tokenizer = env_path("KERN_QWEN3_TOKENIZER_JSON");
  int in[2], out[2];
  REQUIRE(::pipe(in) == 0);
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::close(in[1]);
    ::close(out[0]);
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, STDERR_FILENO);
    const char* argv[] = {kern_run_path.c_str(), plan.c_str(), "--weights", weights.c_str(), "--device", "cpu",
                          "--tokenizer", tokenizer.c_str(), "--chat", "-i", "--steps", "4", nullptr};
    ::execv(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  REQUIRE(::write(in[1], "Hello\n", 6) == 6);  // stdin stays open: the next read waits at the prompt
  // The reply's newline: the reply is done and the loop is back at the prompt.
  std::string got;
  char c = 0;
  while (got.find('\n') == std::string::npos && ::read(out[0], &c, 1) == 1) got += c;
  REQUIRE(got.find('\n') != std::string::npos);
  ::kill(pid, SIGINT);
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 600 && !ended; ++i) {  // at most 60 s
    ended = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!ended) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ::close(in[1]);
  ::close(out[0]);
  REQUIRE(ended);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
}
