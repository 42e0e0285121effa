// A model folder's generation_config.json (kern-run/generation_config.h): its
// eos_token_id ends generation, with or without a tokenizer, in a single run
// and in --requests; --ignore-eos turns it off; a malformed file or an id
// outside the plan's vocabulary is refused naming the file and field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "kern-run/generation_config.h"
#include "rapidjson/document.h"
#include "test/load/test_files.h"
#include "test/run/cli_runner.h"

using namespace kern;
using namespace kern::test;

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// A model folder (examples/convert_hf.py's layout) holding the tiny plan and
/// weights, and `generation_config` as generation_config.json unless empty.
std::string model_folder(const TempDir& dir, const std::string& generation_config) {
  std::filesystem::copy_file(env_path("KERN_TINY_PLAN"), dir.file("model.kplan"));
  std::filesystem::copy_file(env_path("KERN_TINY_WEIGHTS"), dir.file("weights.safetensors"));
  if (!generation_config.empty()) write_text(dir.file("generation_config.json"), generation_config);
  return dir.file("");
}

std::vector<int64_t> generated(const CliResult& r) {
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  std::vector<int64_t> ids;
  for (const auto& v : doc["generated_ids"].GetArray()) ids.push_back(v.GetInt64());
  return ids;
}

}  // namespace

TEST_CASE("generation_config.json: eos_token_id as one id, a list, null or absent", "[run][generation_config]") {
  TempDir dir;
  const std::string p = dir.file("generation_config.json");
  write_text(p, R"({"bos_token_id": 1, "eos_token_id": [128001, 128008, 128009], "do_sample": true})");
  auto list = run::read_generation_end_ids(p);
  REQUIRE(list.ok());
  CHECK(*list == std::vector<int64_t>{128001, 128008, 128009});
  write_text(p, R"({"eos_token_id": 2})");
  auto one = run::read_generation_end_ids(p);
  REQUIRE(one.ok());
  CHECK(*one == std::vector<int64_t>{2});
  write_text(p, R"({"eos_token_id": null})");
  auto null = run::read_generation_end_ids(p);
  REQUIRE(null.ok());
  CHECK(null->empty());
  write_text(p, R"({"temperature": 0.6})");
  auto absent = run::read_generation_end_ids(p);
  REQUIRE(absent.ok());
  CHECK(absent->empty());
}

TEST_CASE("generation_config.json: each malformed eos_token_id or file is refused with its place",
          "[run][generation_config]") {
  TempDir dir;
  const std::string p = dir.file("generation_config.json");
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"{\n  \"eos_token_id\": \"2\"\n}", ":2:3: eos_token_id: expected a token id (an integer in [0, 2^31)), found a string"},
      {R"({"eos_token_id": -1})", ":1:2: eos_token_id: expected a token id (an integer in [0, 2^31)), found an integer out of range"},
      {R"({"eos_token_id": 2147483648})", "found an integer out of range"},
      {R"({"eos_token_id": [1, 2.5]})", ":1:2: eos_token_id[1]: expected a token id (an integer in [0, 2^31)), found a number that is not an integer"},
      {R"({"eos_token_id": [1, [2]]})", "eos_token_id[1]: expected a token id (an integer in [0, 2^31)), found an array"},
      {R"({"eos_token_id": true})", "found a boolean"},
      {R"([2])", ":1:1: expected a JSON object (Hugging Face's generation_config.json)"},
      {"{\"eos_token_id\": [1,\n 2", ":2:3: not valid JSON: "},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    write_text(p, c.text);
    auto r = run::read_generation_end_ids(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kManifest);
    CHECK_THAT(r.error().message, Catch::Matchers::StartsWith(p));
    CHECK_THAT(r.error().message, Catch::Matchers::Contains(c.message));
  }
  write_text(p, std::string(200, '[') + std::string(200, ']'));
  auto deep = run::read_generation_end_ids(p);
  REQUIRE_FALSE(deep.ok());
  CHECK_THAT(deep.error().message, Catch::Matchers::Contains(":1:129: not valid JSON: arrays/objects nest deeper than 128 levels"));
  auto missing = run::read_generation_end_ids(dir.file("absent.json"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::kIo);
}

TEST_CASE("kern-run MODEL_DIR stops at the model folder's eos_token_id, without a tokenizer too",
          "[run][generation_config][cli]") {
  const std::string args = " --device cpu --prompt-ids 3,17,99,200,5 --steps 8 --json";
  TempDir plain;
  const std::vector<int64_t> all = generated(kern_run(model_folder(plain, "") + args));
  REQUIRE(all.size() == 8);
  // The id generated third ends the run there (kept as the last id, as a tokenizer's end token is),
  // given alone or in a list; the earliest occurrence of any listed id wins.
  const int64_t third = all[2];
  size_t first = 0;
  while (all[first] != third) ++first;
  for (const std::string& eos : {std::to_string(third), "[255, " + std::to_string(third) + "]"}) {
    INFO("eos_token_id " << eos);
    TempDir dir;
    const std::string folder = model_folder(dir, "{\"eos_token_id\": " + eos + "}");
    CliResult r = kern_run(folder + args);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    std::vector<int64_t> ids = generated(r);
    CHECK(ids == std::vector<int64_t>(all.begin(), all.begin() + first + 1));
    CliResult ignored = kern_run(folder + args + " --ignore-eos");
    REQUIRE(ignored.rc == 0);
    CHECK(generated(ignored) == all);
    // --requests: every request stops there too, unless it says ignore_eos.
    write_text(dir.file("req.jsonl"), "{\"prompt_ids\": [3, 17, 99, 200, 5], \"max_tokens\": 8}\n"
                                       "{\"prompt_ids\": [3, 17, 99, 200, 5], \"max_tokens\": 8, \"ignore_eos\": true}\n");
    CliResult req = kern_run(folder + " --device cpu --requests " + dir.file("req.jsonl"));
    INFO(req.err);
    REQUIRE(req.rc == 0);
    std::istringstream lines(req.out);
    std::string line;
    size_t n = 0;
    while (std::getline(lines, line) && n < 2) {
      rapidjson::Document doc;
      doc.Parse(line.c_str());
      REQUIRE_FALSE(doc.HasParseError());
      REQUIRE(doc["ids"].IsArray());
      CHECK(doc["ids"].Size() == (n == 0 ? first + 1 : 8));
      CHECK(std::string(doc["finish_reason"].GetString()) == (n == 0 ? "stop" : "length"));
      ++n;
    }
    CHECK(n == 2);
  }
}

TEST_CASE("kern-run refuses a model folder's eos_token_id outside the plan's vocabulary, or a malformed file",
          "[run][generation_config][cli]") {
  TempDir dir;
  const std::string folder = model_folder(dir, R"({"eos_token_id": [2, 256]})");
  CliResult r = kern_run(folder + " --device cpu --prompt-ids 1,2 --steps 2");
  CHECK(r.rc == 2);
  CHECK(r.err == "kern-run: error: the model folder's generation_config.json eos_token_id: end id 256 at index 1 is "
                 "outside the vocabulary [0, 256)\n");
  CHECK(r.out.empty());
  write_text(dir.file("generation_config.json"), R"({"eos_token_id": "2"})");
  CliResult bad = kern_run(folder + " --device cpu --prompt-ids 1,2 --steps 2");
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.err, Catch::Matchers::Contains("generation_config.json:1:2: eos_token_id: expected a token id"));
}
