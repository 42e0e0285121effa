// `kern-run tokenize` and `kern-run detokenize` (token_tools.h).
#include "kern-run/token_tools.h"

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/file_util.h"
#include "kern-run/cli_checks.h"
#include "kern-run/cli_errors.h"
#include "kern-run/cli_options.h"
#include "kern-run/prompt_input.h"
#include "kern-run/stream_output.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {
namespace {

/// Parses a CLI11 app; returns -1 to continue, else the exit code.
int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_error_exit(app, e);
  }
  return -1;
}

}  // namespace

Result<std::vector<int32_t>> check_decodable(const tok::Tokenizer& tokenizer, const std::vector<int64_t>& ids,
                                             const std::string& option) {
  const int64_t n = tokenizer.vocab_size();
  std::vector<int32_t> ids32;
  ids32.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    const std::string at = option + ": id " + std::to_string(id) + " at index " + std::to_string(i);
    if (id < 0 || id >= n)
      return make_error(ErrorKind::kUsage, at + " is outside the tokenizer's ids [0, " + std::to_string(n) + ")");
    if (!tokenizer.has_token(id))
      return make_error(ErrorKind::kUsage,
                        at + " has no token (a gap in the tokenizer's ids [0, " + std::to_string(n) + "))");
    ids32.push_back(static_cast<int32_t>(id));
  }
  return ids32;
}

int run_tokenize(int argc, char** argv) {
  RunOptions o;
  std::string text, system;
  CLI::App app{"kern-run tokenize: print the token ids of a text as a JSON array", "kern-run tokenize"};
  app.add_option("--tokenizer", o.tokenizer_path, "HF tokenizer.json")->required();
  auto* t = app.add_option("--prompt", text, "the text");
  auto* f = app.add_option("--prompt-file", o.prompt_file, "read the text from a file ('-': stdin)");
  t->excludes(f);
  auto* chat = app.add_flag("--chat", o.chat, "wrap the text in Qwen3's chat template first");
  app.add_option("--system", system, "with --chat: a system turn")->needs(chat);
  app.add_flag("--no-think", o.no_think, "with --chat: append an empty think block")->needs(chat);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (t->count() > 0) o.prompt_text = text;
  if (!system.empty()) o.system = system;
  auto tokenizer = tok::Tokenizer::load(o.tokenizer_path);
  if (!tokenizer.ok()) return fail(tokenizer.error().with_context("--tokenizer"));
  auto prompt = build_prompt(o, &tokenizer.value());
  if (!prompt.ok()) return fail(prompt.error());
  std::string out = "[";
  for (size_t i = 0; i < prompt->ids.size(); ++i) out += (i ? "," : "") + std::to_string(prompt->ids[i]);
  write_stdout(out + "]\n");
  return 0;
}

int run_detokenize(int argc, char** argv) {
  std::string tokenizer_path, ids_text, ids_file;
  bool skip_special = false;
  CLI::App app{"kern-run detokenize: print the text of token ids", "kern-run detokenize"};
  app.add_option("--tokenizer", tokenizer_path, "HF tokenizer.json")->required();
  auto* i = app.add_option("--ids", ids_text, "ids: a JSON array or comma-separated, e.g. [1,2,3] or 1,2,3");
  auto* f = app.add_option("--ids-file", ids_file, "read the ids from a file ('-': stdin)");
  i->excludes(f);
  app.add_flag("--skip-special", skip_special, "drop special tokens (<|im_end|> ...)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (i->count() == 0) {
    if (ids_file.empty() || ids_file == "-") {
      RunOptions src;
      src.prompt_file = "-";
      auto read = read_prompt_text(src);
      if (!read.ok()) return fail(read.error());
      ids_text = std::move(read.value());
    } else {
      auto read = read_file(ids_file);
      if (!read.ok()) return fail(read.error().with_context("--ids-file"));
      ids_text = std::move(read.value());
    }
  }
  const std::string option = i->count() > 0 ? "--ids" : ids_file.empty() ? "stdin" : "--ids-file";
  auto ids = parse_id_list(ids_text, option);
  if (!ids.ok()) return fail(ids.error());
  auto tokenizer = tok::Tokenizer::load(tokenizer_path);
  if (!tokenizer.ok()) return fail(tokenizer.error().with_context("--tokenizer"));
  auto ids32 = check_decodable(*tokenizer, *ids, option);
  if (!ids32.ok()) return fail(ids32.error());
  write_stdout(tokenizer->decode(*ids32, skip_special));
  return 0;
}

}  // namespace kern::run
