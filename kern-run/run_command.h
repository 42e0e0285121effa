// The kern-run command: load (plan, contract, device, weights), generate,
// dump buffers, print the report. Separate from main() so it can be driven
// with parsed options.
#pragma once

#include "kern-run/cli_options.h"

namespace kern::run {

/// Exit codes: 0 success; 1 a plan, weight, kernel, device or I/O error;
/// 2 a usage error (bad option value, symbol out of bounds, prompt too long).
int exit_code_for(const Error& e);

/// Runs the command; errors go to stderr as "kern-run: error: <message>".
/// Returns the exit code.
int run_command(const RunOptions& options);

}  // namespace kern::run
