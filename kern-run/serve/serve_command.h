// `kern-run serve PLAN --tokenizer T [--weights W]`: the OpenAI-compatible
// HTTP server (docs/serving.md). The main thread runs the HTTP listener; the
// engine worker's thread loads the model and runs the engine; a signal
// thread turns SIGTERM/SIGINT into a graceful stop.
#pragma once

namespace kern::run::serve {

/// Runs the server until SIGTERM/SIGINT (exit 0) or a load failure (exit
/// code by cli_errors.h: 1 content, 2 usage or I/O). argv[0] is "serve".
/// The plan is opened before listening: a plan that cannot be read or
/// resolved ends it at once (cli_errors.h's codes). Also exit 2: --max-batch
/// above the plan's max_batch (1 without decode_batch); the address cannot
/// be bound.
int run_serve(int argc, char** argv);

}  // namespace kern::run::serve
