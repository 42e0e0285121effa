// kern-run --chat --interactive: a conversation in a terminal (or over a
// pipe) on the engine, llama-cli's conversation mode. Loads the model once,
// then runs chat_repl.h's loop over stdin:
// - a line is a message; a line ending in '\' continues on the next line;
// - on a terminal, "> " is printed before each message (stdout) and a
//   one-line help on stderr at the start;
// - end of input (Ctrl-D) or "/exit" ends the conversation: exit 0;
// - Ctrl-C while a reply streams stops that reply (its tokens stay in the
//   conversation); Ctrl-C at the prompt ends the conversation: exit 130.
// Messages to the user go to stderr as "kern-run: ...".
#pragma once

#include "kern-run/cli_options.h"

namespace kern::run {

/// Runs the conversation; returns the exit code (0, 130 after Ctrl-C at
/// the prompt, or cli_errors.h's for an error, printed on stderr).
int run_chat_command(const RunOptions& options);

}  // namespace kern::run
