// kern-run's one error printer and its exit codes (cli_errors.h).
#include "kern-run/cli_errors.h"

#include <iostream>

namespace kern::run {

int exit_code_for(const Error& e) { return e.kind == ErrorKind::kUsage || e.kind == ErrorKind::kIo ? 2 : 1; }

void print_error(std::string_view message) { std::cerr << "kern-run: error: " << message << "\n"; }

int fail(const Error& e) {
  print_error(e.message);
  return exit_code_for(e);
}

}  // namespace kern::run
