// The kern-run command: load (plan, contract, device, weights), generate,
// dump buffers, print the report. Separate from main() so it can be driven
// with parsed options.
#pragma once

#include "kern-run/cli_errors.h"
#include "kern-run/cli_options.h"

namespace kern::run {

/// Runs the command; errors go to stderr as "kern-run: error: <message>".
/// Returns the exit code (cli_errors.h).
int run_command(const RunOptions& options);

}  // namespace kern::run
