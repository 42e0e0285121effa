// Test helper: runs the built kern-run (KERN_RUN) as a subprocess through
// the shell and captures exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "test/load/test_files.h"
#include "test/engine/tiny_model.h"

namespace kern::test {

struct CliResult {
  int rc = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Quotes `s` for the shell (single quotes).
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs kern-run with `args` (already shell-safe); stdin is `stdin_text`
/// (from a file), or /dev/null when empty. `prefix` goes before the binary
/// (e.g. "timeout 60 " to bound a run that could block).
inline CliResult kern_run(const std::string& args, const std::string& stdin_text = "", const std::string& prefix = "") {
  TempDir dir;
  std::string in = "/dev/null";
  if (!stdin_text.empty()) {
    in = dir.file("in");
    std::ofstream(in, std::ios::binary) << stdin_text;
  }
  std::string cmd = prefix + env_path("KERN_RUN") + " " + args + " <" + in + " >" + dir.file("out") + " 2>" + dir.file("err");
  int status = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir.file("out"));
  r.err = slurp(dir.file("err"));
  return r;
}

/// kern-run's arguments for the tiny model on the cpu device (KERN_TINY_PLAN,
/// KERN_TINY_WEIGHTS), then `extra`.
inline std::string tiny_cpu_args(const std::string& extra) {
  return env_path("KERN_TINY_PLAN") + " --weights " + env_path("KERN_TINY_WEIGHTS") + " --device cpu " + extra;
}

}  // namespace kern::test
