// The kern-run command: load (plan, contract, device, weights), generate,
// dump buffers, print the report. Separate from main() so it can be driven
// with parsed options.
#pragma once

#include "kern-run/cli_options.h"

namespace kern::run {

/// Exit codes, as kern-verify's (0 ok, 1 content, 2 usage/I/O): 0 success;
/// 1 an error in content or at run time (kManifest: plan or contract,
/// kWeight: weights or tokenizer.json content, kKernel, kDevice); 2 a usage
/// error (kUsage: bad option value, prompt too long, id outside the
/// vocabulary) or an I/O error (kIo: a file named on the command line that
/// cannot be read or written, a failed write to stdout).
int exit_code_for(const Error& e);

/// Runs the command; errors go to stderr as "kern-run: error: <message>".
/// Returns the exit code.
int run_command(const RunOptions& options);

}  // namespace kern::run
