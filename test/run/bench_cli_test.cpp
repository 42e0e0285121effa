// kern-run bench on the tiny model and the cpu device: the table, every
// repetition in csv/jsonl, the plan's sha256, and its usage errors. Speeds
// themselves are not asserted (style.md §5: speed is measured in bench/).
#include <catch2/catch.hpp>

#include "common/sha256.h"
#include "rapidjson/document.h"
#include "test/run/cli_runner.h"

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;

namespace {

std::string bench_args(const std::string& extra) {
  return "bench " + env_path("KERN_TINY_PLAN") + " --weights " + env_path("KERN_TINY_WEIGHTS") + " --device cpu " +
         extra;
}

}  // namespace

TEST_CASE("kern-run bench prints a table of pp and tg tests with mean ± sd and median", "[run][bench]") {
  CliResult r = kern_run(bench_args("-p 16,64 -n 8 -r 3"));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  auto digest = sha256_file(env_path("KERN_TINY_PLAN"));
  REQUIRE(digest.ok());
  CHECK_THAT(r.out, Contains("sha256 " + hex_encode(*digest)) && Contains("device: cpu, driver none, build "));
  CHECK_THAT(r.out, Contains("| test | t/s | median t/s | reps |"));
  for (const char* test : {"| pp16 | ", "| pp64 | ", "| tg8 | "}) CHECK_THAT(r.out, Contains(test) && Contains(" ± "));
  CHECK_THAT(r.out, Contains(" | 3 |\n"));
}

TEST_CASE("kern-run bench -o jsonl and -o csv carry every repetition", "[run][bench]") {
  CliResult j = kern_run(bench_args("-p 8 -n 4 -r 2 --warmup 0 -o jsonl"));
  INFO(j.err);
  REQUIRE(j.rc == 0);
  CHECK_THAT(j.err, Contains("| pp8 | "));  // the table still goes to stderr
  size_t nl = j.out.find('\n');
  rapidjson::Document pp;
  pp.Parse(j.out.substr(0, nl).c_str());
  REQUIRE_FALSE(pp.HasParseError());
  CHECK(std::string(pp["test"].GetString()) == "pp8");
  CHECK(pp["samples_ms"].Size() == 2);
  CHECK(pp["warmup"].GetUint64() == 0);
  CHECK(std::string(pp["plan_sha256"].GetString()).size() == 64);
  CHECK(std::count(j.out.begin(), j.out.end(), '\n') == 2);
  CliResult c = kern_run(bench_args("-p 8 -n 0 -r 4 -o csv"));
  REQUIRE(c.rc == 0);
  CHECK(std::count(c.out.begin(), c.out.end(), '\n') == 1 + 4);  // header + 4 repetitions, no tg test
}

TEST_CASE("kern-run bench --decode both measures the asynchronous and the synchronous decode loop",
          "[run][bench][decode_loop]") {
  CliResult r = kern_run(bench_args("-p 0 -n 8 -r 2 --decode both -o json"));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(doc.Size() == 2);
  const auto& async = doc[0];
  const auto& sync = doc[1];
  CHECK(std::string(async["test"].GetString()) == "tg8");
  CHECK(std::string(sync["test"].GetString()) == "tg8-sync");
  CHECK(std::string(async["decode_mode"].GetString()) == "async");
  CHECK(std::string(sync["decode_mode"].GetString()) == "sync");
  // 2 repetitions x (8 decode steps - 2 warm-up - 1 drain): tg's one-id
  // prompt takes its first id from decode (CausalLmContract::prefill_last_for)
  CHECK(async["decode_steady_steps"].GetUint64() == 2 * 5);
  CHECK(async["decode_host_writes_per_step"].GetDouble() == 0);
  CHECK(async["decode_host_waits_per_step"].GetDouble() == 0);
  CHECK(sync["decode_host_writes_per_step"].GetDouble() == 4);
  CHECK(sync["decode_host_waits_per_step"].GetDouble() == 1);
  CHECK(async["decode_host_gap_us_per_step"].IsNull());  // no timers on cpu
  // The md table on stderr has the decode loop's second table.
  CHECK_THAT(r.err, Contains("| tg8 | async | 14.00 | 0.00 | 0.00 | - | - | - |"));  // 14 launches: the tiny fused decode with sample
  CHECK_THAT(r.err, Contains("| tg8-sync | sync | 14.00 | 4.00 | 1.00 | - | - | - |"));
  CliResult bad = kern_run(bench_args("--decode fast"));
  CHECK(bad.rc == 2);
  CHECK(bad.err == "kern-run: error: --decode: unknown mode 'fast' (expected async, sync or both)\n");
}

TEST_CASE("kern-run bench rejects an unknown format and a test longer than the block table", "[run][bench]") {
  CliResult f = kern_run(bench_args("-o xml"));
  CHECK(f.rc == 2);
  CHECK(f.err == "kern-run: error: -o: unknown format 'xml' (expected md, csv, json or jsonl)\n");
  CliResult l = kern_run(bench_args("-p 2048 -n 1"));
  CHECK(l.rc == 2);
  CHECK(l.err == "kern-run: error: a test of 2048 tokens exceeds the block table (1024 tokens)\n");
  CliResult n = kern_run(bench_args("-p 8,-1"));
  CHECK(n.rc == 2);
  CHECK(n.err == "kern-run: error: -p: -1 is negative\n");
}

TEST_CASE("kern-run bench rejects negative counts, a zero chunk and a plan with nothing to measure", "[run][bench]") {
  for (const char* option : {"--warmup", "--repetitions", "--chunk", "--seed"}) {
    INFO(option);
    CliResult r = kern_run(bench_args(std::string("-p 8 -n 0 ") + option + " -1"));
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Matchers::StartsWith("kern-run: error: " + std::string(option) +
                                                  ": -1 is negative: expected a whole number "));
    CHECK(r.out.empty());
  }
  CliResult chunk = kern_run(bench_args("--chunk 0"));
  CHECK(chunk.rc == 2);
  CHECK_THAT(chunk.err,
             Catch::Matchers::StartsWith("kern-run: error: --chunk: 0 is out of range: expected a whole number >= 1\n"));
  CliResult reps = kern_run(bench_args("-r 0"));
  CHECK(reps.rc == 2);
  CHECK_THAT(reps.err,
             Catch::Matchers::StartsWith(
                 "kern-run: error: --repetitions: 0 is out of range: expected a whole number from 1 to 1000000\n"));
  for (const char* lengths : {"-p 0 -n 0", "-p '' -n 0,0"}) {
    INFO(lengths);
    CliResult none = kern_run(bench_args(lengths));
    CHECK(none.rc == 2);
    CHECK(none.err == "kern-run: error: nothing to measure: every -p and -n length is 0 (or the lists are empty)\n");
    CHECK(none.out.empty());
  }
  CliResult text = kern_run(bench_args("-p abc"));
  CHECK(text.rc == 2);
  CHECK(text.err == "kern-run: error: -p: 'abc' is not an integer prompt length\n");
  CliResult gen = kern_run(bench_args("-n 1x"));
  CHECK(gen.rc == 2);
  CHECK(gen.err == "kern-run: error: -n: '1x' is not an integer generation length\n");
}
