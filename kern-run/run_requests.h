// `kern-run PLAN --requests FILE.jsonl [--max-batch N]` (docs/batching.md):
// every request of the file through one engine with continuous batching,
// one JSON result per line on stdout in request order (ids, text with a
// tokenizer, finish reason, timings), each printed as soon as it and every
// earlier one have finished. The whole file is checked (requests_file.h,
// then each request against the model's vocabulary and capacity, as
// FILE:LINE errors) before the model is loaded.
#pragma once

#include "kern-run/cli_options.h"

namespace kern::run {

/// Runs `o.requests_path`; returns the exit status (0: every request
/// finished without error; 1: some request failed, its line says why; 2:
/// bad usage or a bad file, nothing printed on stdout).
int run_requests_command(const RunOptions& o);

}  // namespace kern::run
