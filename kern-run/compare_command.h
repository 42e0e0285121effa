// `kern-run compare A.kplan [B.kplan] ...` (docs/compare.md): the command
// line over compare_session.h and compare_report.h.
#pragma once

namespace kern::run {

/// Runs `kern-run compare` (argv[0] is "compare"). Exit code: the verdict's
/// (PASS 0, FAIL 1, INCONCLUSIVE 3), or 2 for any error before a verdict
/// (usage, I/O, a plan, a device or kernel failure: never 1, which means
/// FAIL), 0 for --help.
int run_compare_command(int argc, char** argv);

}  // namespace kern::run
