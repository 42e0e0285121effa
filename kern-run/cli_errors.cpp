// kern-run's one error printer and its exit codes (cli_errors.h).
#include "kern-run/cli_errors.h"

#include <iostream>

#include "common/terminal_text.h"

namespace kern::run {

int exit_code_for(const Error& e) { return e.kind == ErrorKind::kUsage || e.kind == ErrorKind::kIo ? 2 : 1; }

// Messages name tensors, dtypes, buffers and paths from the user's files:
// control bytes and ANSI escapes in them show as visible characters.
void print_error(std::string_view message) {
  std::cerr << "kern-run: error: " << terminal_safe(message, TerminalText::kMessage) << "\n";
}

int fail(const Error& e) {
  print_error(e.message);
  return exit_code_for(e);
}

}  // namespace kern::run
