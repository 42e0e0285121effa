// kern-run's command line (SPEC §7): parsed with CLI11 into plain options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kern::run {

/// One `--dump-buffer NAME=FILE`.
struct DumpRequest {
  std::string buffer;
  std::string path;
};

/// Everything the command line says.
struct RunOptions {
  std::string plan_path;
  std::string weights_path;
  std::string kernels_dir;  ///< empty: the plan's directory
  std::vector<int64_t> prompt_ids;
  uint64_t steps = 0;
  uint64_t chunk = 512;
  std::optional<uint64_t> capacity;  ///< tokens; default min(4096, 16 x block table pages)
  std::string device = "auto";
  bool json = false;
  bool verbose = false;
  std::vector<DumpRequest> dumps;
};

/// Parses "1,2,3" (decimal, optional sign, no empty items; "" is an empty
/// list). Errors (kUsage)
/// name the bad item.
Result<std::vector<int64_t>> parse_id_list(const std::string& text);

/// Parses "NAME=FILE" (both non-empty). Errors (kUsage) quote the text.
Result<DumpRequest> parse_dump_request(const std::string& text);

/// Outcome of parsing argv: options, or an exit code to return right away
/// (--help printed: 0; a CLI error printed to stderr: 2).
struct ParsedCommandLine {
  std::optional<RunOptions> options;
  int exit_code = 0;
};

/// Parses argv with CLI11; prints help or errors itself.
ParsedCommandLine parse_command_line(int argc, char** argv);

}  // namespace kern::run
