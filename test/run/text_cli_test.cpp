// kern-run with text in and text out on the tiny Qwen3 with Qwen3's real
// vocabulary (examples/tiny-qwen3-textvocab.json, random weights: the text
// is gibberish) and Qwen3's real tokenizer.json, on the cpu device: prompt
// sources, the chat template, streamed text equal to the decoded ids, and
// determinism across runs and prefill chunk sizes (bit-identical ids and
// text: the cpu device is deterministic, so no tolerance). The cpu device
// has no graph mode; the graph-vs-eager case belongs with the cuda device.
#include <catch2/catch.hpp>

#include "kern-run/chat_template.h"
#include "kern-run/tokenizer/tokenizer.h"
#include "rapidjson/document.h"
#include "test/run/cli_runner.h"
#include "test/tokenizer/tokenizer_fixture.h"
#include "test/run/text_helpers.h"

#include <fstream>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const char* kPrompt = "The quick brown fox jumps over the lazy dog. Caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC 42!";

std::string text_args(const std::string& extra) {
  return env_path("KERN_TEXTVOCAB_PLAN") + " --weights " + env_path("KERN_TEXTVOCAB_WEIGHTS") +
         " --device cpu --tokenizer " + env_path("KERN_QWEN3_TOKENIZER_JSON") + " " + extra;
}

std::vector<int64_t> ids_of(const rapidjson::Value& a) {
  std::vector<int64_t> out;
  for (const auto& v : a.GetArray()) out.push_back(v.GetInt64());
  return out;
}

/// Runs with --json and parses the one object.
rapidjson::Document run_json(const std::string& extra, const std::string& stdin_text = "") {
  CliResult r = kern_run(text_args(extra + " --json"), stdin_text);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  return doc;
}

}  // namespace

TEST_CASE("kern-run --prompt streams the decoded generated ids to stdout and statistics to stderr",
          "[run][text]") {
  std::string p = "--prompt " + shell_quote(kPrompt) + " --steps 24";
  rapidjson::Document doc = run_json(p);
  std::vector<int64_t> generated = ids_of(doc["generated_ids"]);
  REQUIRE(generated.size() == 24);  // random weights: no end token in these 24 steps
  CHECK(std::string(doc["stop_reason"].GetString()) == "steps");
  CHECK(ids_of(doc["prompt_ids"]) == qwen3_encode(kPrompt));
  std::vector<int32_t> gen32(generated.begin(), generated.end());
  const std::string text = qwen3_tokenizer().decode(gen32);
  CHECK(std::string(doc["text"].GetString(), doc["text"].GetStringLength()) == text);
  CHECK_FALSE(text.empty());

  CliResult r = kern_run(text_args(p));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out == text + "\n");
  CHECK_THAT(r.err, Contains("time to first token") && Contains("prefill: ") && Contains("ms/token") &&
                        Contains("load: ") && Contains(" MB read in place, not copied), stage ") &&
                            Contains("stopped by --steps"));
}

TEST_CASE("text output is bit-identical across runs and prefill chunk sizes", "[run][text][determinism]") {
  std::string p = "--prompt " + shell_quote(kPrompt) + " --steps 16";
  CliResult a = kern_run(text_args(p));
  CliResult b = kern_run(text_args(p));
  REQUIRE(a.rc == 0);
  REQUIRE(b.rc == 0);
  CHECK(a.out == b.out);
  for (const char* chunk : {"1", "3", "8"}) {
    INFO("chunk " << chunk);
    CliResult c = kern_run(text_args(p + " --chunk " + chunk));
    REQUIRE(c.rc == 0);
    CHECK(c.out == a.out);
  }
  // The ids behind the text too, not only their decoding.
  CHECK(ids_of(run_json(p + " --chunk 1")["generated_ids"]) == ids_of(run_json(p)["generated_ids"]));
}

TEST_CASE("--prompt-file, --prompt-file - and piped stdin give the same prompt ids as --prompt", "[run][text]") {
  TempDir dir;
  const std::string text = "line one\nline two \xF0\x9F\x98\x80\n";
  std::ofstream(dir.file("p.txt"), std::ios::binary) << text;
  std::vector<int64_t> want = qwen3_encode(text);
  CHECK(ids_of(run_json("--steps 1 --prompt-file " + dir.file("p.txt"))["prompt_ids"]) == want);
  CHECK(ids_of(run_json("--steps 1 --prompt-file -", text)["prompt_ids"]) == want);
  CHECK(ids_of(run_json("--steps 1", text)["prompt_ids"]) == want);
  CHECK(ids_of(run_json("--steps 1 --prompt " + shell_quote(text))["prompt_ids"]) == want);
}

TEST_CASE("--chat encodes the prompt inside Qwen3's chat template", "[run][text][chat]") {
  rapidjson::Document doc = run_json("--steps 2 --chat --system 'Be brief.' --no-think --prompt 'Hi there'");
  CHECK(ids_of(doc["prompt_ids"]) == qwen3_encode(run::render_qwen3_chat({std::string("Be brief."), "Hi there", true})));
  CHECK(doc["prompt_ids"][0].GetInt64() == 151644);  // <|im_start|>
  rapidjson::Document plain = run_json("--steps 2 --chat --prompt 'Hi there'");
  CHECK(ids_of(plain["prompt_ids"]) == qwen3_encode("<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"));
}

TEST_CASE("a tokenized prompt with ids beyond the model's embedding is rejected before loading anything",
          "[run][text]") {
  // The 256-row tiny model cannot take Qwen3's ids; the weights path does not
  // even exist: the check runs before the weights are opened.
  CliResult r = kern_run(env_path("KERN_TINY_PLAN") + " --weights /nonexistent.safetensors --device cpu --tokenizer " +
                         env_path("KERN_QWEN3_TOKENIZER_JSON") + " --prompt 'Hello world' --steps 1");
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: the tokenized prompt: prompt id 9707 at index 0 is outside the vocabulary [0, 256) "
                 "(the embedding's rows)\n");
  CHECK(r.out.empty());
}

TEST_CASE("a prompt that is not UTF-8 is a usage error naming the byte offset", "[run][text]") {
  TempDir dir;
  std::ofstream(dir.file("bad.txt"), std::ios::binary) << "ab\xff";
  CliResult r = kern_run(text_args("--steps 1 --prompt-file " + dir.file("bad.txt")));
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: the prompt: encode: text is not valid UTF-8 at byte 2\n");
  CHECK(r.out.empty());
  // With --chat the offset is still the byte of the user's file, not of the
  // templated text around it.
  CliResult chat = kern_run(text_args("--steps 1 --chat --prompt-file " + dir.file("bad.txt")));
  CHECK(chat.rc == 2);
  CHECK(chat.err == "kern-run: error: the prompt: encode: text is not valid UTF-8 at byte 2\n");
  CliResult sys = kern_run(text_args("--steps 1 --chat --prompt hi --system \"$(printf 'x\\377')\""));
  CHECK(sys.rc == 2);
  CHECK(sys.err == "kern-run: error: the --system text: encode: text is not valid UTF-8 at byte 1\n");
}

TEST_CASE("kern-run tokenize prints the ids as a JSON array and detokenize reverses it", "[run][text][tokenize]") {
  const std::string tok = " --tokenizer " + env_path("KERN_QWEN3_TOKENIZER_JSON");
  CliResult t = kern_run("tokenize" + tok + " --prompt " + shell_quote(kPrompt));
  INFO(t.err);
  REQUIRE(t.rc == 0);
  std::string want = "[";
  for (int64_t id : qwen3_encode(kPrompt)) want += (want.size() > 1 ? "," : "") + std::to_string(id);
  CHECK(t.out == want + "]\n");
  CliResult d = kern_run("detokenize" + tok + " --ids " + shell_quote(t.out));
  REQUIRE(d.rc == 0);
  CHECK(d.out == kPrompt);
  CliResult piped = kern_run("detokenize" + tok, t.out);  // ids on stdin
  REQUIRE(piped.rc == 0);
  CHECK(piped.out == kPrompt);
  CliResult chat = kern_run("tokenize" + tok + " --chat --prompt hi");
  CHECK(chat.out == "[151644,872,198,6023,151645,198,151644,77091,198]\n");
  CliResult special = kern_run("detokenize" + tok + " --skip-special --ids 151644,6023,151645");
  CHECK(special.out == "hi");
  CliResult bad = kern_run("detokenize" + tok + " --ids 1,x");
  CHECK(bad.rc == 2);
  CHECK(bad.err == "kern-run: error: --ids: 'x' is not an integer token id\n");
}

TEST_CASE("detokenize rejects ids without a token, naming the id and the valid range", "[run][text][tokenize]") {
  const std::string tok = " --tokenizer " + env_path("KERN_QWEN3_TOKENIZER_JSON");
  // Qwen3's tokenizer has ids [0, 151669); the model's embedding pads to 151936.
  for (const char* id : {"151700", "151936", "-1"}) {
    INFO(id);
    CliResult r = kern_run("detokenize" + tok + " --ids " + id);
    CHECK(r.rc == 2);
    CHECK(r.err == std::string("kern-run: error: --ids: id ") + id + " at index 0 is outside the tokenizer's ids [0, 151669)\n");
    CHECK(r.out.empty());
  }
  CliResult second = kern_run("detokenize" + tok + " --ids 6023,151700");
  CHECK(second.rc == 2);
  CHECK(second.err == "kern-run: error: --ids: id 151700 at index 1 is outside the tokenizer's ids [0, 151669)\n");
  CliResult piped = kern_run("detokenize" + tok, "[6023, 151668, 200000]\n");
  CHECK(piped.rc == 2);
  CHECK(piped.err == "kern-run: error: stdin: id 200000 at index 2 is outside the tokenizer's ids [0, 151669)\n");
}

TEST_CASE("detokenize rejects malformed id lists, from --ids, --ids-file and stdin", "[run][text][tokenize]") {
  const std::string tok = " --tokenizer " + env_path("KERN_QWEN3_TOKENIZER_JSON");
  auto err = [&](const std::string& ids) {
    CliResult r = kern_run("detokenize" + tok + " --ids " + shell_quote(ids));
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    return r.err;
  };
  CHECK(err("[1,2") == "kern-run: error: --ids: '[' without a closing ']'\n");
  CHECK(err("1,2]") == "kern-run: error: --ids: unexpected ']': give ids as 1,2,3 or [1,2,3]\n");
  CHECK(err("[1,2]]]") == "kern-run: error: --ids: unexpected ']': give ids as 1,2,3 or [1,2,3]\n");
  CHECK(err("1,2,") == "kern-run: error: --ids: empty item at index 2 (two commas, or a comma at an end)\n");
  CliResult stdin_list = kern_run("detokenize" + tok, "1,2,,3\n");
  CHECK(stdin_list.rc == 2);
  CHECK(stdin_list.err == "kern-run: error: stdin: empty item at index 2 (two commas, or a comma at an end)\n");
  // Whitespace around items and a trailing newline are fine.
  CliResult spaced = kern_run("detokenize" + tok, "[ 6023 ,\n 6023 ]\n");
  CHECK(spaced.rc == 0);
  CHECK(spaced.out == "hihi");
}

TEST_CASE("detokenize --ids-file errors name --ids-file and escape binary bytes", "[run][text][tokenize]") {
  const std::string tok = " --tokenizer " + env_path("KERN_QWEN3_TOKENIZER_JSON");
  CliResult missing = kern_run("detokenize" + tok + " --ids-file /nonexistent/ids.json");
  CHECK(missing.rc == 2);
  CHECK(missing.err == "kern-run: error: --ids-file: /nonexistent/ids.json: cannot open: No such file or directory\n");
  TempDir dir;
  std::ofstream(dir.file("ids.bin"), std::ios::binary) << std::string("\x01\xff\x1b" "2J\n", 6);
  CliResult binary = kern_run("detokenize" + tok + " --ids-file " + dir.file("ids.bin"));
  CHECK(binary.rc == 2);
  CHECK(binary.err == "kern-run: error: --ids-file: '\\x01\\xff\\x1b2J' is not an integer token id\n");
}

TEST_CASE("a directory given as --tokenizer is an I/O error naming it", "[run][text][tokenize]") {
  TempDir dir;
  const std::string tok = " --tokenizer " + dir.file("");
  for (const std::string& cmd : {"tokenize" + tok + " --prompt hi", "detokenize" + tok + " --ids 1",
                                 env_path("KERN_TEXTVOCAB_PLAN") + " --weights " +
                                     env_path("KERN_TEXTVOCAB_WEIGHTS") + " --device cpu --prompt hi" + tok}) {
    INFO(cmd);
    CliResult r = kern_run(cmd);
    CHECK(r.rc == 2);
    CHECK(r.err == "kern-run: error: --tokenizer: " + dir.file("") + ": is a directory, not a file\n");
  }
}

TEST_CASE("tokenize and streamed text report a failed write to stdout", "[run][text]") {
  const std::string tok = " --tokenizer " + env_path("KERN_QWEN3_TOKENIZER_JSON");
  TempDir dir;
  // Shell redirection to /dev/full opens the device; it is never replaced.
  for (const std::string& args : {"tokenize" + tok + " --prompt hi", "detokenize" + tok + " --ids 6023",
                                  text_args("--prompt hi --steps 4 --ignore-eos")}) {
    INFO(args);
    std::string cmd = env_path("KERN_RUN") + " " + args + " </dev/null >/dev/full 2>" + dir.file("err");
    int status = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK(slurp(dir.file("err")) == "kern-run: error: stdout: write error: No space left on device\n");
  }
}

TEST_CASE("detokenize with stdin closed is a usage error (exit 2), and /dev/zero inputs are refused at once",
          "[run][text][tokenize]") {
  const std::string tok = " --tokenizer " + env_path("KERN_QWEN3_TOKENIZER_JSON");
  TempDir dir;
  const std::string cmd = env_path("KERN_RUN") + " detokenize" + tok + " <&- >" + dir.file("out") + " 2>" +
                          dir.file("err");
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(slurp(dir.file("err")) ==
        "kern-run: error: stdin is closed: give the input as an option or a file instead\n");
  CHECK(slurp(dir.file("out")).empty());
  // /dev/zero used to end in std::bad_alloc (exit 1) after eating memory.
  CliResult ids = kern_run("detokenize" + tok + " --ids-file /dev/zero");
  CHECK(ids.rc == 2);
  CHECK(ids.err == "kern-run: error: --ids-file: /dev/zero: is a character device, not a regular file\n");
  CliResult prompt = kern_run("tokenize" + tok + " --prompt-file /dev/zero");
  CHECK(prompt.rc == 2);
  CHECK(prompt.err.find("/dev/zero: is a character device, not a regular file") != std::string::npos);
  CliResult tokenizer = kern_run("tokenize --tokenizer /dev/zero --prompt hi");
  CHECK(tokenizer.rc == 2);
  CHECK(tokenizer.err.find("/dev/zero: is a character device, not a regular file") != std::string::npos);
}

TEST_CASE("weights truncated under a running kern-run: one error line naming the file, exit 2, no SIGBUS",
          "[run][text]") {
  // The everyday `cp new.safetensors w.safetensors` over weights in use
  // truncates them first. kern-run streams text, so its first byte on the
  // pipe says generation is under way; it is stopped there (SIGSTOP), the
  // file is truncated, and it goes on: the next weight read faults.
  TempDir dir;
  const std::string weights = dir.file("w.safetensors"), err = dir.file("err");
  std::ofstream(weights, std::ios::binary) << slurp(env_path("KERN_TEXTVOCAB_WEIGHTS"));
  const std::string plan = env_path("KERN_TEXTVOCAB_PLAN"), tokenizer = env_path("KERN_QWEN3_TOKENIZER_JSON");
  const std::string kern_run_path = env_path("KERN_RUN");
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(e, STDERR_FILENO);
    ::close(out[0]);
    // 1000 steps: far more than the step taken between the first byte and SIGSTOP.
    const char* argv[] = {kern_run_path.c_str(), plan.c_str(), "--weights", weights.c_str(), "--device", "cpu",
                          "--tokenizer", tokenizer.c_str(), "--prompt", "hello", "--steps", "1000", "--ignore-eos",
                          nullptr};
    ::execv(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(out[1]);
  char byte = 0;
  const ssize_t n = ::read(out[0], &byte, 1);
  ::kill(pid, SIGSTOP);
  REQUIRE(n == 1);
  REQUIRE(::truncate(weights.c_str(), 0) == 0);
  ::kill(pid, SIGCONT);
  // Drain stdout so a full pipe cannot hold the child.
  char buf[4096];
  while (::read(out[0], buf, sizeof buf) > 0) {
  }
  ::close(out[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  const std::string message = slurp(err);
  INFO(message);
  REQUIRE(WIFEXITED(status));  // not killed by SIGBUS
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(message, StartsWith("kern-run: error: " + weights + ": the file was truncated while in use (offset "));
  CHECK_THAT(message, Contains(" B is past its end now); stopped (replace a file in use with mv, never cp over it)\n"));
}

// Issue 22 item 15: a --tokenizer that lacks the ids the plan produces (the
// 263-token test fixture under the 151,936-row text-vocab model) printed
// empty text silently; each id without a token still prints as nothing (HF's
// decode) and the first is named once on stderr.
TEST_CASE("kern-run warns once when generated ids have no token in the tokenizer", "[run][text]") {
  TempDir dir;
  const std::string small = dir.file("small-tokenizer.json");
  std::ofstream(small, std::ios::binary) << tok::testing::fixture_json();
  const std::string args = env_path("KERN_TEXTVOCAB_PLAN") + " --weights " + env_path("KERN_TEXTVOCAB_WEIGHTS") +
                           " --device cpu --tokenizer " + small + " --prompt hello --steps 8";
  CliResult r = kern_run(args + " --json");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  std::vector<int64_t> missing;
  for (int64_t id : ids_of(doc["generated_ids"]))
    if (id >= 263) missing.push_back(id);
  REQUIRE_FALSE(missing.empty());  // random weights over 151,936 rows: most ids are past the fixture's 263
  CHECK(r.err == "kern-run: warning: generated id " + std::to_string(missing[0]) +
                     " is past the tokenizer's ids [0, 263): printed as nothing, as HF's decode does (an embedding "
                     "padding row, which trained weights do not choose: random weights, or a --tokenizer of another "
                     "model?); said once per run\n");
  // Streamed: the same one warning; the text is what decode gives (ids with a token only).
  CliResult streamed = kern_run(args);
  CHECK(streamed.rc == 0);
  CHECK_THAT(streamed.err, StartsWith(r.err));
  CHECK(std::string(doc["text"].GetString()) + "\n" == streamed.out);
}
