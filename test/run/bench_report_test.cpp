// kern-run bench's statistics and output formats on hand-made results (no
// timing involved): mean, sample standard deviation and median, and that
// csv/json/jsonl carry every repetition with the run's identity.
#include <catch2/catch.hpp>

#include "kern-run/bench_report.h"
#include "rapidjson/document.h"

using namespace kern;
using Catch::Matchers::Contains;

namespace {

run::BenchInfo info() { return {"m.kplan", std::string(64, 'a'), "cpu", "none", "abc123-dirty", 512, 1}; }

std::vector<run::BenchTest> tests() {
  // pp4: 4 tokens in 1, 2, 4 ms = 4000, 2000, 1000 tok/s; tg2: 2 tokens in 1, 1 ms.
  return {{4, 0, {1.0, 2.0, 4.0}}, {0, 2, {1.0, 1.0}}};
}

}  // namespace

TEST_CASE("bench statistics are the mean, the sample standard deviation and the median", "[run][bench]") {
  run::Stats s = run::summarize({4000, 2000, 1000});
  CHECK(s.mean == Approx(7000.0 / 3));
  CHECK(s.sd == Approx(1527.525231651947));  // sqrt(((1666.67)^2 + 333.33^2 + 1333.33^2) / 2)
  CHECK(s.median == 2000);
  CHECK(run::summarize({1, 2, 3, 10}).median == 2.5);
  CHECK(run::summarize({5}).sd == 0);
  CHECK(run::summarize({}).mean == 0);
}

TEST_CASE("bench tests are named ppN and tgN and count tokens per second per repetition", "[run][bench]") {
  auto t = tests();
  CHECK(t[0].name() == "pp4");
  CHECK(t[1].name() == "tg2");
  CHECK(run::tokens_per_s(t[0]) == std::vector<double>{4000, 2000, 1000});
  CHECK(run::tokens_per_s(t[1]) == std::vector<double>{2000, 2000});
}

TEST_CASE("the bench markdown table shows mean ± sd and the median per test", "[run][bench]") {
  std::string md = run::render_bench_md(info(), tests());
  CHECK_THAT(md, Contains("| pp4 | 2333.33 ± 1527.53 | 2000.00 | 3 |"));
  CHECK_THAT(md, Contains("| tg2 | 2000.00 ± 0.00 | 2000.00 | 2 |"));
  CHECK_THAT(md, Contains("sha256 " + std::string(64, 'a')) && Contains("driver none") && Contains("abc123-dirty"));
}

TEST_CASE("bench csv has a header and one row per repetition", "[run][bench]") {
  std::string csv = run::render_bench_csv(info(), tests());
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 3 + 2);
  CHECK_THAT(csv, Contains("\nm.kplan," + std::string(64, 'a') + ",cpu,none,abc123-dirty,512,pp4,4,0,2,4.000000,1000.0000\n"));
}

TEST_CASE("bench json and jsonl carry every repetition and the summary", "[run][bench]") {
  rapidjson::Document doc;
  doc.Parse(run::render_bench_json(info(), tests()).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(doc.IsArray());
  REQUIRE(doc.Size() == 2);
  const auto& pp = doc[0];
  CHECK(std::string(pp["test"].GetString()) == "pp4");
  CHECK(pp["samples_ms"].Size() == 3);
  CHECK(pp["samples_ts"][2].GetDouble() == 1000);
  CHECK(pp["median_ts"].GetDouble() == 2000);
  CHECK(std::string(pp["build_commit"].GetString()) == "abc123-dirty");
  std::string jsonl = run::render_bench_jsonl(info(), tests());
  CHECK(std::count(jsonl.begin(), jsonl.end(), '\n') == 2);
  rapidjson::Document line;
  line.Parse(jsonl.substr(jsonl.find('\n') + 1).c_str());
  REQUIRE_FALSE(line.HasParseError());
  CHECK(std::string(line["test"].GetString()) == "tg2");
}

TEST_CASE("bench names a synchronous tg test tgN-sync and tables each tg test's decode loop", "[run][bench]") {
  std::vector<run::BenchTest> t = tests();
  run::BenchTest sync{0, 2, {2.0, 2.0}, {}, true};
  sync.decode.steady_steps = 4;
  sync.decode.launches_per_step = 1;
  sync.decode.host_writes_per_step = 4;
  sync.decode.host_waits_per_step = 1;
  sync.decode.gpu_timed = true;
  sync.decode.gpu_busy_ms_per_step = 1.5;
  sync.decode.gpu_wall_ms_per_step = 1.6;
  sync.decode.host_gap_us_per_step = 100;
  t.push_back(sync);
  CHECK(t[2].name() == "tg2-sync");
  std::string md = run::render_bench_md(info(), t);
  CHECK_THAT(md, Contains("| tg2 | async | - | - | - | - | - | - |"));  // no steady-state steps measured
  CHECK_THAT(md, Contains("| tg2-sync | sync | 1.00 | 4.00 | 1.00 | 1.5000 | 1.6000 | 100.0 |"));
  rapidjson::Document doc;
  doc.Parse(run::render_bench_json(info(), t).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK_FALSE(doc[0].HasMember("decode_mode"));  // pp tests have no decode loop
  CHECK(std::string(doc[2]["decode_mode"].GetString()) == "sync");
  CHECK(doc[2]["decode_host_gap_us_per_step"].GetDouble() == 100);
  CHECK(doc[1]["decode_launches_per_step"].IsNull());
}

TEST_CASE("bench output formats are parsed by name", "[run][bench]") {
  auto jsonl = run::parse_bench_format("jsonl");
  REQUIRE(jsonl.ok());
  CHECK(*jsonl == run::BenchFormat::kJsonl);
  auto bad = run::parse_bench_format("xml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "-o: unknown format 'xml' (expected md, csv, json or jsonl)");
}

TEST_CASE("bench's table, csv and jsonl printed test by test equal the whole", "[run][bench][progress]") {
  // kern-run bench prints the head at once and each row as its test ends
  // (issue 25); the pieces must add up to the documented whole.
  const auto t = tests();
  CHECK(run::render_bench_md_head(info()) ==
        "plan: m.kplan (sha256 " + std::string(64, 'a') +
            ")\ndevice: cpu, driver none, build abc123-dirty, chunk 512\n\n"
            "| test | t/s | median t/s | reps |\n| --- | ---: | ---: | ---: |\n");
  CHECK(run::render_bench_md_row(t[0]) == "| pp4 | 2333.33 ± 1527.53 | 2000.00 | 3 |\n");
  CHECK(run::render_bench_md_head(info()) + run::render_bench_md_row(t[0]) + run::render_bench_md_row(t[1]) +
            run::render_bench_md_tail(t) ==
        run::render_bench_md(info(), t));
  CHECK(run::render_bench_csv_head() + run::render_bench_csv_rows(info(), t[0]) +
            run::render_bench_csv_rows(info(), t[1]) ==
        run::render_bench_csv(info(), t));
  CHECK(run::render_bench_jsonl_row(info(), t[0]) + run::render_bench_jsonl_row(info(), t[1]) ==
        run::render_bench_jsonl(info(), t));
}
