// kern-run: the minimal executor and Qwen3 inference command (SPEC §2, §7).
// main() only picks the subcommand (a first argument of tokenize,
// detokenize, bench, compare or serve; anything else is a generation run), sets up logging
// to stderr, checks that stdout was written, and catches third-party
// exceptions at the boundary (style.md §3).
#include <cstring>
#include <exception>
#include <iostream>

#include "kern-run/chat_command.h"
#include "kern-run/cli_options.h"
#include "kern-run/bench.h"
#include "kern-run/compare_command.h"
#include "kern-run/run_command.h"
#include "kern-run/serve/serve_command.h"
#include "kern-run/run_requests.h"
#include "kern-run/stream_output.h"
#include "kern-run/token_tools.h"
#include "kern-run/tp_ranks.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace {

/// Runs the command argv names (a subcommand, else a generation run).
int dispatch(int argc, char** argv) {
  // Subcommands parse their own arguments (argv[1] becomes their argv[0]).
  // A plan file literally named like a subcommand can be given as ./NAME.
  if (argc > 1) {
    if (std::strcmp(argv[1], "tokenize") == 0) return kern::run::run_tokenize(argc - 1, argv + 1);
    if (std::strcmp(argv[1], "detokenize") == 0) return kern::run::run_detokenize(argc - 1, argv + 1);
    if (std::strcmp(argv[1], "bench") == 0) return kern::run::run_bench_command(argc - 1, argv + 1);
    if (std::strcmp(argv[1], "compare") == 0) return kern::run::run_compare_command(argc - 1, argv + 1);
    if (std::strcmp(argv[1], "serve") == 0) return kern::run::serve::run_serve(argc - 1, argv + 1);
  }
  auto parsed = kern::run::parse_command_line(argc, argv);
  if (!parsed.options) return parsed.exit_code;
  spdlog::set_level(parsed.options->load.verbose ? spdlog::level::info : spdlog::level::warn);
  if (parsed.options->interactive) return kern::run::run_chat_command(*parsed.options);
  if (!parsed.options->requests_path.empty()) return kern::run::run_requests_command(*parsed.options);
  return kern::run::run_command(*parsed.options);
}

/// A command that succeeded but whose stdout could not be written (a full
/// disk, /dev/full) fails: exit code `rc`, or 2 (an I/O error) when `rc` was 0.
int finish_stdout(int rc) {
  kern::Status s = kern::run::flush_stdout();
  if (rc != 0 || s.ok()) return rc;
  return kern::run::fail(s.error());
}

}  // namespace

int main(int argc, char** argv) {
  kern::run::set_process_args(argc, argv);  // --tp N starts ranks 1..N-1 with these (tp_ranks.h)
  try {
    auto logger = spdlog::stderr_color_mt("kern-run");
    logger->set_pattern("kern-run: %l: %v");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::warn);
    return finish_stdout(dispatch(argc, argv));
  } catch (const std::exception& e) {
    kern::run::print_error(e.what());
    return 1;
  }
}
