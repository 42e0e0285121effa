// Numeric options of every kern-run command (kern-run/cli_checks.h,
// add_number_option; issue 49 cases 7 and 8, issue 48 case 9): NaN,
// infinite and overflowing floating-point values, and integers outside
// their type, are refused with exit 2 and one line naming the option,
// never wrapped, saturated or let through. The command-line cases fail in
// parsing, before any plan is read.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kern-run/cli_checks.h"
#include "test/load/test_files.h"
#include "test/run/cli_runner.h"

using namespace kern;
using namespace kern::test;
using kern::run::add_number_option;
using kern::run::CountRange;
using kern::run::real_error;
using kern::run::RealRange;

namespace {

/// Parses `args` (after a program name) with `app`; the ValidationError's
/// message, or "" when the parse succeeded.
std::string parse(CLI::App& app, std::vector<std::string> args) {
  std::vector<char*> argv;
  std::string name = "t";
  argv.push_back(name.data());
  for (std::string& a : args) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

/// Exactly one line on stderr, "kern-run: error: " then `start`...
void check_one_line(const CliResult& r, const std::string& start) {
  INFO(r.err);
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("kern-run: error: " + start, 0) == 0);
  CHECK(r.err.find('\n') == r.err.size() - 1);
}

}  // namespace

TEST_CASE("real_error accepts finite decimal numbers in range and explains the rest", "[run][cli][numbers]") {
  const RealRange unit{.min = 0, .max = 1};
  CHECK(real_error("0", unit).empty());
  CHECK(real_error("1", unit).empty());
  CHECK(real_error("+0.5", unit).empty());
  CHECK(real_error(".5", unit).empty());
  CHECK(real_error("5e-1", unit).empty());
  CHECK(real_error("-0", unit).empty());
  CHECK(real_error("1e-999", unit).empty());  // too small to represent: 0
  CHECK(real_error("1.5", unit) == "1.5 is out of range: expected a number from 0 to 1");
  CHECK(real_error("nan", unit) == "nan is not a finite number: expected a number from 0 to 1");
  CHECK(real_error("-NaN", unit) == "-NaN is not a finite number: expected a number from 0 to 1");
  CHECK(real_error("inf", unit) == "inf is not a finite number: expected a number from 0 to 1");
  CHECK(real_error("-Infinity", unit) == "-Infinity is not a finite number: expected a number from 0 to 1");
  CHECK(real_error("0x1p-2", unit) == "'0x1p-2' is not a number: expected a number from 0 to 1");
  CHECK(real_error(" 0.5", unit) == "' 0.5' is not a number: expected a number from 0 to 1");
  CHECK(real_error("1e", unit) == "'1e' is not a number: expected a number from 0 to 1");
  CHECK(real_error(".", unit) == "'.' is not a number: expected a number from 0 to 1");
  CHECK(real_error("", unit) == "'' is not a number: expected a number from 0 to 1");
  const RealRange positive{.min = 0, .above_min = true};
  CHECK(real_error("0", positive) == "0 is out of range: expected a number > 0 and <= 1.79769e+308");
  CHECK(real_error("1e308", positive).empty());
  CHECK(real_error("1e309", positive) == "1e309 is out of range: expected a number > 0 and <= 1.79769e+308");
  CHECK(real_error("-1e999", positive) == "-1e999 is out of range: expected a number > 0 and <= 1.79769e+308");
  CHECK(real_error("1e99999999999999999999", positive).rfind("1e99999999999999999999 is out of range", 0) == 0);
  // A 400-digit number: the message quotes its first 40 digits, the range stays short.
  CHECK(real_error(std::string(400, '9'), positive) ==
        std::string(40, '9') + "... is out of range: expected a number > 0 and <= 1.79769e+308");
  CHECK(kern::run::count_error(std::string(400, '9'), 1) ==
        std::string(40, '9') + "... is out of range: expected a whole number >= 1");
}

TEST_CASE("add_number_option checks by the target's type: no wrap, no saturation, no octal", "[run][cli][numbers]") {
  SECTION("u64: -1 and 2^64 are refused, 2^64 - 1 and 010 read as decimal") {
    CLI::App app;
    uint64_t seed = 7;
    add_number_option(app, "--seed", seed, "");
    CHECK(parse(app, {"--seed", "18446744073709551616"}) ==
          "--seed: 18446744073709551616 is out of range: expected a whole number >= 0");
    CHECK(parse(app, {"--seed", "-1"}) == "--seed: -1 is negative: expected a whole number >= 0");
    CHECK(parse(app, {"--seed", "0x10"}) == "--seed: '0x10' is not a whole number: expected a whole number >= 0");
    CHECK(parse(app, {"--seed", "18446744073709551615"}).empty());
    CHECK(seed == UINT64_MAX);
    CHECK(parse(app, {"--seed", "010"}).empty());
    CHECK(seed == 10);
    CHECK(parse(app, {"--seed", "+000"}).empty());
    CHECK(seed == 0);
  }
  SECTION("u32 and int: the type's largest value bounds the range") {
    CLI::App app;
    uint32_t k = 0;
    int port = 0;
    add_number_option(app, "--top-k", k, "");
    add_number_option(app, "--port", port, "", CountRange{.max = 65535});
    CHECK(parse(app, {"--top-k", "4294967296"}) ==
          "--top-k: 4294967296 is out of range: expected a whole number from 0 to 4294967295");
    CHECK(parse(app, {"--port", "65536"}) == "--port: 65536 is out of range: expected a whole number from 0 to 65535");
    CHECK(parse(app, {"--port", "0x50"}) ==
          "--port: '0x50' is not a whole number: expected a whole number from 0 to 65535");
    CHECK(parse(app, {"--top-k", "4294967295", "--port", "08080"}).empty());
    CHECK(k == UINT32_MAX);
    CHECK(port == 8080);
  }
  SECTION("float: the largest finite float bounds the range; an optional target is checked the same") {
    CLI::App app;
    float t = 0;
    std::optional<double> d;
    add_number_option(app, "--temperature", t, "", RealRange{});
    add_number_option(app, "--d", d, "", RealRange{.min = 1, .max = 2});
    CHECK(parse(app, {"--temperature", "1e39"}) ==
          "--temperature: 1e39 is out of range: expected a number from 0 to 3.40282e+38");
    CHECK(parse(app, {"--d", "nan"}) == "--d: nan is not a finite number: expected a number from 1 to 2");
    CHECK(parse(app, {"--temperature", "0.7", "--d", "1.5"}).empty());
    CHECK(t == 0.7f);
    CHECK(d == 1.5);
  }
}

TEST_CASE("kern-run refuses --seed 2^64 and -1 instead of running with 2^64 - 1", "[run][cli][numbers]") {
  const std::string args = env_path("KERN_TINY_PLAN") + " --weights " + env_path("KERN_TINY_WEIGHTS") +
                           " --device cpu --prompt-ids 1 --steps 1 --temperature 1 --seed ";
  check_one_line(kern_run(args + "18446744073709551616"),
                 "--seed: 18446744073709551616 is out of range: expected a whole number >= 0\n");
  check_one_line(kern_run(args + "-1"), "--seed: -1 is negative: expected a whole number >= 0\n");
  // The sampling options are checked in parsing too.
  const std::string run = env_path("KERN_TINY_PLAN") + " --random-weights 1 --prompt-ids 1 ";
  check_one_line(kern_run(run + "--temperature nan"), "--temperature: nan is not a finite number");
  check_one_line(kern_run(run + "--top-p inf"),
                 "--top-p: inf is not a finite number: expected a number > 0 and <= 1\n");
  check_one_line(kern_run(run + "--min-p -0.5"), "--min-p: -0.5 is out of range: expected a number from 0 to 1\n");
  check_one_line(kern_run(run + "--top-k -1"),
                 "--top-k: -1 is negative: expected a whole number from 0 to 4294967295\n");
  // bench's numbers go through the same helper.
  check_one_line(kern_run("bench " + env_path("KERN_TINY_PLAN") + " --random-weights 1 --seed 18446744073709551616"),
                 "--seed: 18446744073709551616 is out of range");
}

TEST_CASE("kern-run compare refuses --kl-threshold nan and --rtol inf with the range, not a 150-digit number",
          "[run][cli][numbers]") {
  const std::string args = "compare " + env_path("KERN_TINY_PLAN") + " --random-weights 1 --prompt-ids 1 ";
  check_one_line(kern_run(args + "--kl-threshold nan"),
                 "--kl-threshold: nan is not a finite number: expected a number > 0 and <= 1.79769e+308\n");
  check_one_line(kern_run(args + "--rtol inf"),
                 "--rtol: inf is not a finite number: expected a number from 0 to 1.79769e+308\n");
  check_one_line(kern_run(args + "--atol -1"),
                 "--atol: -1 is out of range: expected a number from 0 to 1.79769e+308\n");
  check_one_line(kern_run(args + "--kl-threshold 0"), "--kl-threshold: 0 is out of range");
}

TEST_CASE("kern-run serve refuses NaN, infinite and overflowing durations at start", "[run][cli][numbers][serve]") {
  // Refused in parsing: the plan is not read, nothing listens.
  const std::string args = "serve " + env_path("KERN_TINY_PLAN") + " --random-weights 1 --port 0 ";
  const std::string range = "expected a number from 0.001 to 1e+06\n";
  check_one_line(kern_run(args + "--request-timeout nan"), "--request-timeout: nan is not a finite number: " + range);
  check_one_line(kern_run(args + "--request-timeout 1e10"), "--request-timeout: 1e10 is out of range: " + range);
  check_one_line(kern_run(args + "--sse-keepalive nan"), "--sse-keepalive: nan is not a finite number: " + range);
  check_one_line(kern_run(args + "--sse-keepalive 0"), "--sse-keepalive: 0 is out of range: " + range);
  check_one_line(kern_run(args + "--shutdown-grace inf"),
                 "--shutdown-grace: inf is not a finite number: expected a number from 0 to 1e+06\n");
  check_one_line(kern_run(args + "--port 65536"),
                 "--port: 65536 is out of range: expected a whole number from 0 to 65535\n");
}
