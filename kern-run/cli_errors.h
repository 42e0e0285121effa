// How kern-run's commands end on an error: one line "kern-run: error:
// <message>" on stderr, and an exit code chosen by who must act. Every
// command (run, bench, tokenize, detokenize, main's boundaries) reports here.
#pragma once

#include <string_view>

#include "common/result.h"

namespace kern::run {

/// Exit codes, as kern-verify's (0 ok, 1 content, 2 usage/I/O): 0 success;
/// 1 an error in content or at run time (kManifest: plan or contract,
/// kWeight: weights or tokenizer.json content, kKernel, kDevice); 2 a usage
/// error (kUsage: bad option value, prompt too long, id outside the
/// vocabulary) or an I/O error (kIo: a file named on the command line that
/// cannot be read or written, a failed write to stdout).
int exit_code_for(const Error& e);

/// Prints "kern-run: error: <message>" and a newline on stderr.
void print_error(std::string_view message);

/// Prints `e` as print_error does; returns exit_code_for(e).
int fail(const Error& e);

}  // namespace kern::run
