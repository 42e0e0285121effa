// kern-run: the minimal executor and Qwen3 inference command (SPEC §2, §7).
// main() only parses, sets up logging to stderr and catches third-party
// exceptions at the boundary (style.md §3).
#include <exception>
#include <iostream>

#include "kern-run/cli_options.h"
#include "kern-run/run_command.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  try {
    auto logger = spdlog::stderr_color_mt("kern-run");
    logger->set_pattern("kern-run: %l: %v");
    spdlog::set_default_logger(logger);
    auto parsed = kern::run::parse_command_line(argc, argv);
    if (!parsed.options) return parsed.exit_code;
    spdlog::set_level(parsed.options->verbose ? spdlog::level::info : spdlog::level::warn);
    return kern::run::run_command(*parsed.options);
  } catch (const std::exception& e) {
    std::cerr << "kern-run: error: " << e.what() << "\n";
    return 1;
  }
}
