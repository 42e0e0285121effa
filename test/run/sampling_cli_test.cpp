// kern-run's sampling flags on the tiny model (cpu device): --temperature,
// --top-k, --top-p, --min-p and --seed reach the device (a seeded run
// repeats, another seed differs), --json reports the parameters and the
// seed, a missing --seed is chosen and reported, and the combinations kern
// cannot run are refused with exit code 2.
#include <catch2/catch.hpp>

#include "rapidjson/document.h"
#include "test/run/cli_runner.h"

using namespace kern;
using namespace kern::test;

namespace {

/// The tiny model on the cpu device, 20 steps from a fixed prompt, then `extra`.
std::string sampling_args(const std::string& extra) {
  return tiny_cpu_args("--prompt-ids 3,17,99,200,5,42,7 --steps 20 " + extra);
}

/// The run's --json object (REQUIREs exit 0).
rapidjson::Document run_json(const std::string& extra) {
  CliResult r = kern_run(sampling_args(extra + " --json"));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  return doc;
}

std::vector<int64_t> ids(const rapidjson::Document& doc) {
  std::vector<int64_t> out;
  for (const auto& v : doc["generated_ids"].GetArray()) out.push_back(v.GetInt64());
  return out;
}

}  // namespace

TEST_CASE("kern-run --temperature with --seed repeats its ids and reports its parameters", "[run][cli][sampling]") {
  const std::string flags = "--temperature 3 --top-k 50 --top-p 0.9 --min-p 0.01 --seed 12345";
  const auto a = run_json(flags);
  CHECK(ids(a) == ids(run_json(flags)));
  CHECK(ids(a) == ids(run_json(flags + " --sync")));
  CHECK(ids(a) != ids(run_json("--temperature 3 --top-k 50 --top-p 0.9 --min-p 0.01 --seed 12346")));
  CHECK(ids(a) != ids(run_json("")));  // greedy
  const auto& s = a["sampling"];
  CHECK(s["temperature"].GetDouble() == 3.0);
  CHECK(s["top_k"].GetUint() == 50);
  CHECK(s["top_p"].GetDouble() == 0.9);  // the shortest decimal of the f32, not 0.899999976
  CHECK(s["min_p"].GetDouble() == 0.01);
  CHECK(s["seed"].GetUint64() == 12345);
  CHECK(a["decode_host_writes_per_step"].GetDouble() == 0);  // the sampling inputs are not rewritten per step
  const auto greedy = run_json("");
  CHECK(greedy["sampling"]["temperature"].GetDouble() == 0);
  CHECK(greedy["sampling"]["seed"].IsNull());
}

TEST_CASE("kern-run --temperature without --seed picks a seed, reports it, and that seed repeats the run",
          "[run][cli][sampling]") {
  CliResult r = kern_run(sampling_args("--temperature 3 --json"));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  const uint64_t seed = doc["sampling"]["seed"].GetUint64();
  CHECK(r.err == "kern-run: sampling with seed " + std::to_string(seed) + " (pass --seed " + std::to_string(seed) +
                     " to repeat)\n");
  CHECK(ids(run_json("--temperature 3 --seed " + std::to_string(seed))) == ids(doc));
}

TEST_CASE("kern-run refuses sampling parameters out of range and sampling with --spec", "[run][cli][sampling]") {
  struct Bad {
    const char* flags;
    const char* message;
  };
  const Bad bad[] = {
      {"--temperature -1",
       "kern-run: error: --temperature: -1 is out of range: expected a number from 0 to 3.40282e+38\n"},
      {"--temperature 1 --top-p 0", "kern-run: error: --top-p: 0 is out of range: expected a number > 0 and <= 1\n"},
      {"--temperature 1 --min-p 2", "kern-run: error: --min-p: 2 is out of range: expected a number from 0 to 1\n"},
  };
  for (const Bad& b : bad) {
    INFO(b.flags);
    CliResult r = kern_run(sampling_args(b.flags));
    CHECK(r.rc == 2);
    CHECK(r.err == b.message);
  }
  TempDir dir;
  const std::string verify = env_path("KERN_VERIFY") + " " + std::string(KERN_SOURCE_ROOT) +
                             "/examples/tiny-qwen3-dspark.json -o " + dir.file("spec.kplan") + " >/dev/null 2>&1";
  REQUIRE(std::system(verify.c_str()) == 0);
  CliResult r = kern_run(dir.file("spec.kplan") + " --random-weights 3 --device cpu --prompt-ids 1,2,3 --steps 8 "
                         "--spec --temperature 0.7 --seed 1");
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: --spec decodes greedily (speculative decoding with sampling is not supported): "
                 "drop --temperature, or drop --spec to sample\n");
  // The plain decode of a speculative plan samples.
  r = kern_run(dir.file("spec.kplan") + " --random-weights 3 --device cpu --prompt-ids 1,2,3 --steps 8 "
               "--temperature 0.7 --seed 1");
  INFO(r.err);
  CHECK(r.rc == 0);
}
