// kern-run --requests (kern-run/run_requests.h, docs/batching.md) on the
// tiny model (cpu device): one JSON result per line in request order, each
// request's ids exactly its solo ids (kern-run --prompt-ids alone, greedy
// or seeded sampling) at --max-batch 8, 2 and 1, a sampled line without a
// seed reporting the one it drew; stop ids and max_tokens per line; every bad line
// reported as FILE:LINE:COLUMN with nothing on stdout; the parser's checks
// (requests_file.h) one field at a time.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "kern-run/requests_file.h"
#include "rapidjson/document.h"
#include "test/load/test_files.h"
#include "test/run/cli_runner.h"

using namespace kern;
using namespace kern::test;

namespace {

/// The generated ids of one solo kern-run --json (`sampling`: its sampling flags).
std::vector<int64_t> solo(const std::string& ids, uint64_t steps, const std::string& stops = "",
                          const std::string& sampling = "") {
  CliResult r = kern_run(tiny_cpu_args("--prompt-ids " + ids + " --steps " + std::to_string(steps) + " --json" +
                                   (stops.empty() ? "" : " --stop-ids " + stops) +
                                   (sampling.empty() ? "" : " " + sampling)));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  std::vector<int64_t> out;
  for (const auto& v : doc["generated_ids"].GetArray()) out.push_back(v.GetInt64());
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string first_error(const std::string& path, const std::string& text) {
  auto r = run::parse_requests(path, text);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("kern-run --requests prints one result per line in request order with each request's solo ids",
          "[run][cli][batch]") {
  // Greedy and sampled lines; `flags` are the solo run's sampling flags, `fields` the line's.
  struct Want {
    std::string ids;
    uint64_t steps;
    std::string flags, fields;
  };
  const std::vector<Want> wants = {
      {"3,17,99,200,5", 9, "", ""},
      {"1", 14, "--temperature 2 --seed 5", "\"temperature\": 2, \"seed\": 5"},
      {"7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7", 6, "", ""},
      {"42,43", 11, "--temperature 1.5 --top-k 30 --top-p 0.9 --seed 77",
       "\"temperature\": 1.5, \"top_k\": 30, \"top_p\": 0.9, \"seed\": 77"},
      {"100,5,9", 20, "", ""},
      {"9,8,7,6", 16, "--temperature 3 --min-p 0.05 --seed 123", "\"temperature\": 3, \"min_p\": 0.05, \"seed\": 123"},
  };
  std::vector<std::vector<int64_t>> solos;
  for (const Want& w : wants) solos.push_back(solo(w.ids, w.steps, "", w.flags));
  for (size_t i : {1, 3, 5}) CHECK(solos[i] != solo(wants[i].ids, wants[i].steps));  // they do sample
  // Request 4 stops on the 3rd id of its solo run.
  const int64_t stop = solos[4][2];
  solos[4] = solo(wants[4].ids, wants[4].steps, std::to_string(stop));
  REQUIRE(solos[4].size() == 3);
  TempDir dir;
  const std::string file = dir.file("requests.jsonl");
  {
    std::ofstream f(file);
    for (size_t i = 0; i < wants.size(); ++i) {
      f << "{\"prompt_ids\": [" << wants[i].ids << "], \"max_tokens\": " << wants[i].steps;
      if (i == 4) f << ", \"stop_ids\": [" << stop << "]";
      if (!wants[i].fields.empty()) f << ", " << wants[i].fields;
      f << "}\n";
      if (i == 1) f << "\n";  // a blank line is skipped
    }
    f << "{\"prompt_ids\": [5, 6], \"max_tokens\": 10, \"temperature\": 2}\n";  // no seed: one is drawn
  }
  for (const char* batch : {"8", "2", "1"}) {
    INFO("--max-batch " << batch);
    CliResult r = kern_run(tiny_cpu_args("--requests " + file + " --max-batch " + batch));
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() == wants.size() + 1);
    for (size_t i = 0; i < lines.size(); ++i) {
      INFO("result " << i);
      rapidjson::Document doc;
      doc.Parse(lines[i].c_str());
      REQUIRE_FALSE(doc.HasParseError());
      CHECK(doc["index"].GetUint64() == i);
      CHECK(doc["line"].GetUint() == (i <= 1 ? i + 1 : i + 2));
      std::vector<int64_t> ids;
      for (const auto& v : doc["ids"].GetArray()) ids.push_back(v.GetInt64());
      CHECK(doc["timings"].HasMember("decode_tok_s"));
      if (i == wants.size()) {
        // The drawn seed is reported, and it is the one the request sampled with.
        REQUIRE(doc.HasMember("seed"));
        CHECK(ids == solo("5,6", 10, "", "--temperature 2 --seed " + std::to_string(doc["seed"].GetUint64())));
        continue;
      }
      CHECK(ids == solos[i]);
      CHECK(std::string(doc["finish_reason"].GetString()) == (i == 4 ? "stop" : "length"));
      CHECK(doc.HasMember("seed") == !wants[i].flags.empty());  // sampled lines only
    }
  }
}

// Issue 39: requests sharing a long prefix, one after another, map its full
// pages from the second on (cached_tokens), with each request's solo ids;
// --no-prefix-cache reports 0 for every one, with the same ids.
TEST_CASE("kern-run --requests --max-batch 1: a shared prefix's full pages are cached_tokens from the second request on",
          "[run][cli][batch][prefix]") {
  std::string shared;  // 50 ids: 3 full pages and 2 ids of a 4th
  for (int i = 0; i < 50; ++i) shared += (i ? "," : "") + std::to_string((i * 37 + 11) % 200);
  const std::vector<std::string> tails = {"1,2,3", "4,5,6,7,8,9,10,11,12,13,14,15,16,17", "200,3", "9"};
  std::vector<std::vector<int64_t>> solos;
  for (const auto& t : tails) solos.push_back(solo(shared + "," + t, 5));
  TempDir dir;
  const std::string file = dir.file("shared.jsonl");
  {
    std::ofstream f(file);
    for (const auto& t : tails) f << "{\"prompt_ids\": [" << shared << "," << t << "], \"max_tokens\": 5}\n";
  }
  for (const bool cache : {true, false}) {
    INFO((cache ? "cache on" : "--no-prefix-cache"));
    CliResult r = kern_run(tiny_cpu_args("--requests " + file + " --max-batch 1" + (cache ? "" : " --no-prefix-cache")));
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK(r.err.find(cache ? "prefix cache on" : "prefix cache off") != std::string::npos);
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() == tails.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      INFO("result " << i);
      rapidjson::Document doc;
      doc.Parse(lines[i].c_str());
      REQUIRE_FALSE(doc.HasParseError());
      std::vector<int64_t> ids;
      for (const auto& v : doc["ids"].GetArray()) ids.push_back(v.GetInt64());
      CHECK(ids == solos[i]);
      REQUIRE(doc.HasMember("cached_tokens"));
      CHECK(doc["cached_tokens"].GetUint64() == (cache && i > 0 ? 48u : 0u));
    }
  }
  // A single run reports it too: 0 (the cache lives in one process).
  CliResult one = kern_run(tiny_cpu_args("--prompt-ids 1,2,3 --steps 2 --json"));
  REQUIRE(one.rc == 0);
  CHECK(one.out.find("\"cached_tokens\":0") != std::string::npos);
  // Only where a cache can hit.
  CliResult bad = kern_run(tiny_cpu_args("--prompt-ids 1,2,3 --no-prefix-cache"));
  CHECK(bad.rc == 2);
  CHECK(bad.err == "kern-run: error: --no-prefix-cache applies to --requests and --chat -i (a single prompt never "
                   "hits the cache)\n");
}

TEST_CASE("kern-run --requests reports every bad line as FILE:LINE:COLUMN and prints nothing on stdout",
          "[run][cli][batch]") {
  TempDir dir;
  const std::string file = dir.file("bad.jsonl");
  std::ofstream(file) << "{\"prompt_ids\": [1, 2], \"max_tokens\": 0}\n"
                      << "{\"prompt_ids\": [1, 2]}\n"
                      << "{\"prompt_ids\": [1, 999]}\n"
                      << "not json\n";
  CliResult r = kern_run(tiny_cpu_args("--requests " + file));
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(file + ":1:38: 'max_tokens' must be an integer >= 1") != std::string::npos);
  CHECK(r.err.find(file + ":4:2: json syntax error: invalid value") != std::string::npos);
  CHECK(r.err.find(file + ":2:") == std::string::npos);  // a good line
  // The ids are checked against the vocabulary once the syntax is right.
  std::ofstream(file) << "{\"prompt_ids\": [1, 999]}\n";
  r = kern_run(tiny_cpu_args("--requests " + file));
  CHECK(r.rc == 2);
  CHECK(r.err.find(file + ":1: prompt id 999 at index 1 is outside the vocabulary [0, 256)") != std::string::npos);
  // A text prompt needs a tokenizer; a batch above the plan's bound is refused.
  std::ofstream(file) << "{\"prompt\": \"hello\"}\n";
  r = kern_run(tiny_cpu_args("--requests " + file));
  CHECK(r.rc == 2);
  CHECK(r.err.find(file + ":1: 'prompt' needs --tokenizer") != std::string::npos);
  std::ofstream(file) << "{\"prompt_ids\": [1]}\n";
  r = kern_run(tiny_cpu_args("--requests " + file + " --max-batch 9"));
  CHECK(r.rc == 2);
  CHECK(r.err.find("--max-batch 9 exceeds the plan's max_batch 8") != std::string::npos);
  // --requests carries its own prompts.
  r = kern_run(tiny_cpu_args("--requests " + file + " --prompt-ids 1,2"));
  CHECK(r.rc == 2);
}

TEST_CASE("the requests parser checks each field's type and range and names its column", "[run][batch]") {
  auto one = run::parse_requests("f.jsonl",
                                 "{\"prompt_ids\": [1, 2], \"max_tokens\": 5, \"temperature\": 0.5, \"top_k\": 40, "
                                 "\"top_p\": 0.9, \"min_p\": 0.05, \"seed\": 18446744073709551615, \"stop_ids\": [3], "
                                 "\"stop\": [\"\\n\\n\"], \"ignore_eos\": true}\n");
  REQUIRE(one.ok());
  const run::RequestLine& l = one.value()[0];
  CHECK(l.prompt_ids == std::vector<int64_t>{1, 2});
  CHECK(l.max_tokens == 5u);
  CHECK(l.sampling.temperature == 0.5f);
  CHECK(l.sampling.top_k == 40u);
  CHECK(l.sampling.top_p == 0.9f);
  CHECK(l.sampling.min_p == 0.05f);
  CHECK(l.sampling.seed == UINT64_MAX);
  CHECK(l.has_seed);
  CHECK(l.stop_ids == std::vector<int64_t>{3});
  CHECK(l.stop == std::vector<std::string>{"\n\n"});
  CHECK(l.ignore_eos);
  CHECK(first_error("f", "{\"prompt_ids\": [1], \"top_p\": 0}") == "f:1:30: 'top_p' must be a number in (0, 1]");
  CHECK(first_error("f", "{\"prompt_ids\": [1], \"min_p\": 2}") == "f:1:30: 'min_p' must be a number in [0, 1]");
  CHECK(first_error("f", "{\"prompt_ids\": [1], \"temperature\": -1}") ==
        "f:1:36: 'temperature' must be a number >= 0");
  CHECK(first_error("f", "{\"prompt_ids\": [1, -4]}") == "f:1:20: 'prompt_ids[1]' must be a token id (an integer >= 0)");
  CHECK(first_error("f", "{\"prompt_ids\": []}") == "f:1:16: 'prompt_ids' is empty: a prompt needs at least one token");
  CHECK(first_error("f", "{\"prompt_ids\": [1], \"prompt\": \"x\"}") ==
        "f:1:1: give either 'prompt_ids' or 'prompt', not both");
  CHECK(first_error("f", "{\"max_tokens\": 3}") == "f:1:1: a request needs 'prompt_ids' (token ids) or 'prompt' (text)");
  CHECK(first_error("f", "{\"prompt_ids\": [1], \"top\": 3}").rfind("f:1:21: unknown field 'top'", 0) == 0);
  CHECK(first_error("f", "{\"prompt_ids\": [1], \"prompt_ids\": [2]}") == "f:1:21: duplicate field 'prompt_ids'");
  CHECK(first_error("f", "[1, 2]") == "f:1:1: a request must be a JSON object, found an array");
  CHECK(first_error("f", "{\"prompt_ids\": [1], \"stop\": 3}") == "f:1:29: 'stop' must be a string or an array of strings");
  CHECK(first_error("f", "\n\n") == "f: no request (one JSON object per line)");
  // Every bad line, not just the first; good lines in between are not reported.
  const std::string many = first_error("f", "{\"prompt_ids\": [1], \"seed\": -1}\n{\"prompt_ids\": [1]}\n{}\n");
  CHECK(many == "f:1:29: 'seed' must be an integer in [0, 2^64)\n"
                "f:3:1: a request needs 'prompt_ids' (token ids) or 'prompt' (text)");
}

namespace {

/// "1,1,...,1": `n` ids.
std::string ones(size_t n) {
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) s += i == 0 ? "1" : ",1";
  return s;
}

}  // namespace

TEST_CASE("a prompt_ids array past the capacity is refused when id capacity + 1 is read, not after the line",
          "[run][batch]") {
  const std::string refused = "f:1:16: 'prompt_ids' holds more than the capacity of 8 tokens (the prompt and at least "
                              "one generated token must fit)";
  // Text that is not JSON right after id 9: only a parse that stops there
  // reports the capacity instead of a syntax error.
  auto past = run::parse_requests("f", "{\"prompt_ids\": [" + ones(9) + ", @@ not json\n", 8);
  REQUIRE_FALSE(past.ok());
  CHECK(past.error().message == refused);
  // 8 ids fit this check (the engine's check_request refuses a prompt that
  // leaves no room to generate): the same line is read on to its syntax error.
  auto at = run::parse_requests("f", "{\"prompt_ids\": [" + ones(8) + ", @@ not json\n", 8);
  REQUIRE_FALSE(at.ok());
  CHECK_THAT(at.error().message, Catch::Matchers::StartsWith("f:1:") && Catch::Matchers::Contains("json syntax error"));
  auto fits = run::parse_requests("f", "{\"prompt_ids\": [" + ones(8) + "], \"stop_ids\": [" + ones(20) + "]}\n", 8);
  REQUIRE(fits.ok());
  CHECK(fits.value()[0].prompt_ids.size() == 8);
  CHECK(fits.value()[0].stop_ids.size() == 20);  // other arrays are not bounded by the capacity
  // Ids nested deeper, or another field's, do not count; every bad line is still listed.
  auto lines = run::parse_requests("f",
                                   "{\"x\": {\"prompt_ids\": [" + ones(9) + "]}, \"prompt_ids\": [1]}\n"
                                   "{\"prompt_ids\": [1], \"prompt_ids\": [" + ones(9) + "]}\n"
                                   "{\"prompt_ids\": [" + ones(100000) + "]}\n",
                                   8);
  REQUIRE_FALSE(lines.ok());
  CHECK(lines.error().message == "f:1:2: unknown field 'x' (expected prompt_ids, prompt, max_tokens, temperature, "
                                 "top_k, top_p, min_p, seed, stop_ids, stop, ignore_eos)\n"
                                 "f:2:35: 'prompt_ids' holds more than the capacity of 8 tokens (the prompt and at "
                                 "least one generated token must fit)\n" +
                                     refused.substr(0, 2) + "3" + refused.substr(3));
}

TEST_CASE("kern-run --requests refuses a 4 MB prompt line after the capacity's ids, in one line naming the file",
          "[run][cli][batch]") {
  // The tiny model's capacity is 1024 tokens: 1025 ids, then two million
  // items that are not JSON. Read to its end the line would be a syntax
  // error (and cost a tree of every item); it is refused at id 1025.
  TempDir dir;
  const std::string file = dir.file("long.jsonl");
  {
    std::ofstream out(file);
    out << "{\"prompt_ids\": [" << ones(1025);
    for (int i = 0; i < 2000000; ++i) out << ",x";
    out << "]}\n{\"prompt_ids\": [1]}\n";
  }
  CliResult r = kern_run(tiny_cpu_args("--requests " + file));
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "kern-run: error: " + file + ":1:16: 'prompt_ids' holds more than the capacity of 1024 tokens (the "
                 "prompt and at least one generated token must fit)\n");
}
