// kern-run bench's results as a markdown table or JSON (bench_report.h).
#include "kern-run/bench_report.h"

#include <algorithm>
#include <cmath>

#include "kern-run/number_text.h"
#include "kern-run/report.h"
#include "kern-run/spec_report.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {
namespace {

/// A csv field: quoted (with doubled quotes) when it holds a comma, quote or newline.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/// A tg test's decode loop figures (the keys of kern-run --json).
void write_decode(rapidjson::Writer<rapidjson::StringBuffer>& w, const BenchTest& t) {
  w.Key("decode_mode");
  w.String(t.sync ? "sync" : "async");
  write_decode_step_json(w, t.decode);
}

void write_test(rapidjson::Writer<rapidjson::StringBuffer>& w, const BenchInfo& info, const BenchTest& t) {
  auto str = [&w](const char* key, const std::string& v) {
    w.Key(key);
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  };
  std::vector<double> ts = tokens_per_s(t);
  Stats s = summarize(ts);
  w.StartObject();
  str("plan", info.plan);
  str("plan_sha256", info.plan_sha256);
  str("device", info.device);
  str("driver", info.driver);
  str("build_commit", info.build_commit);
  w.Key("chunk");
  w.Uint64(info.chunk);
  w.Key("warmup");
  w.Uint64(info.warmup);
  str("test", t.name());
  w.Key("n_prompt");
  w.Uint64(t.n_prompt);
  w.Key("n_gen");
  w.Uint64(t.n_gen);
  w.Key("samples_ms");
  w.StartArray();
  for (double v : t.ms) w.Double(v);
  w.EndArray();
  w.Key("samples_ts");
  w.StartArray();
  for (double v : ts) w.Double(v);
  w.EndArray();
  w.Key("avg_ts");
  w.Double(s.mean);
  w.Key("stddev_ts");
  w.Double(s.sd);
  w.Key("median_ts");
  w.Double(s.median);
  if (t.n_gen > 0 && !t.spec) write_decode(w, t);
  if (t.spec) write_spec_json(w, *t.spec);
  if (!t.collective_ms.empty()) {  // --tp N > 1 only: one-device output keeps its keys
    w.Key("samples_collective_ms");
    w.StartArray();
    for (double v : t.collective_ms) w.Double(v);
    w.EndArray();
    w.Key("samples_collective_bytes");
    w.StartArray();
    for (uint64_t v : t.collective_bytes) w.Uint64(v);
    w.EndArray();
  }
  w.EndObject();
}

std::string test_json(const BenchInfo& info, const BenchTest& t) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  write_test(w, info, t);
  return sb.GetString();
}

/// The table of the speculative tests ("" when there are none): "\n| test |
/// block | tokens/round | acceptance | draft ms | verify ms | precompute ms |
/// ms/round |" and a row per test (means over its rounds).
std::string render_spec_md(const std::vector<BenchTest>& tests) {
  std::string out;
  for (const BenchTest& t : tests) {
    if (!t.spec) continue;
    if (out.empty())
      out = "\n| test | block | tokens/round | acceptance | draft ms | verify ms | precompute ms | ms/round |\n"
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    const engine::SpecStats& s = *t.spec;
    out += "| " + t.name() + " | " + std::to_string(s.block) + " | " + format_double("%.2f", s.tokens_per_round()) + " | " +
           format_double("%.1f", 100.0 * s.acceptance_rate()) + "% | " + format_double("%.3f", s.mean_draft_ms()) + " | " +
           format_double("%.3f", s.mean_verify_ms()) + " | " + format_double("%.3f", s.mean_precompute_ms()) + " | " +
           format_double("%.3f", s.mean_draft_ms() + s.mean_verify_ms() + s.mean_precompute_ms()) + " |\n";
  }
  return out;
}

}  // namespace

std::string BenchTest::name() const {
  if (n_prompt > 0) return "pp" + std::to_string(n_prompt);
  if (batch > 0) return "tg" + std::to_string(n_gen) + "-b" + std::to_string(batch);
  return "tg" + std::to_string(n_gen) + (spec ? "-spec" : sync ? "-sync" : "");
}

Stats summarize(std::vector<double> values) {
  Stats s;
  if (values.empty()) return s;
  double n = static_cast<double>(values.size());
  for (double v : values) s.mean += v;
  s.mean /= n;
  if (values.size() > 1) {
    double sq = 0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(sq / (n - 1));
  }
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  s.median = values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  return s;
}

std::vector<double> tokens_per_s(const BenchTest& t) {
  std::vector<double> out;
  for (double ms : t.ms) out.push_back(ms > 0 ? static_cast<double>(t.tokens()) * 1000.0 / ms : 0.0);
  return out;
}

Result<BenchFormat> parse_bench_format(const std::string& s) {
  if (s == "md") return BenchFormat::kMd;
  if (s == "csv") return BenchFormat::kCsv;
  if (s == "json") return BenchFormat::kJson;
  if (s == "jsonl") return BenchFormat::kJsonl;
  return make_error(ErrorKind::kUsage, "-o: unknown format '" + s + "' (expected md, csv, json or jsonl)");
}

std::string render_bench_md_head(const BenchInfo& info) {
  return "plan: " + info.plan + " (sha256 " + info.plan_sha256 + ")\n" + "device: " + info.device + ", driver " +
         info.driver + ", build " + info.build_commit + ", chunk " + std::to_string(info.chunk) + "\n\n" +
         "| test | t/s | median t/s | reps |\n| --- | ---: | ---: | ---: |\n";
}

std::string render_bench_md_row(const BenchTest& t) {
  Stats s = summarize(tokens_per_s(t));
  return "| " + t.name() + " | " + format_double("%.2f", s.mean) + " ± " + format_double("%.2f", s.sd) + " | " +
         format_double("%.2f", s.median) + " | " + std::to_string(t.ms.size()) + " |\n";
}

std::string render_bench_md_tail(const std::vector<BenchTest>& tests) {
  bool any_tg = false;
  for (const BenchTest& t : tests) any_tg = any_tg || (t.n_gen > 0 && !t.spec && t.batch == 0);
  if (!any_tg) return render_spec_md(tests) + render_collective_md(tests);
  std::string out =
      "\n| test | decode loop | launches/step | host writes/step | host waits/step | GPU busy ms/step | "
      "GPU wall ms/step | host gap us/step |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const BenchTest& t : tests) {
    if (t.n_gen == 0 || t.spec || t.batch > 0) continue;  // speculative tests: their own table; batched: no per-step records
    const engine::DecodeStats& d = t.decode;
    auto steady = [&d](double v) { return d.steady_steps > 0 ? format_double("%.2f", v) : std::string("-"); };
    auto gpu = [&d](const char* f, double v) { return d.gpu_timed ? format_double(f, v) : std::string("-"); };
    out += "| " + t.name() + " | " + (t.sync ? "sync" : "async") + " | " + steady(d.launches_per_step) + " | " +
           steady(d.host_writes_per_step) + " | " + steady(d.host_waits_per_step) + " | " +
           gpu("%.4f", d.gpu_busy_ms_per_step) + " | " + gpu("%.4f", d.gpu_wall_ms_per_step) + " | " +
           gpu("%.1f", d.host_gap_us_per_step) + " |\n";
  }
  return out + render_spec_md(tests) + render_collective_md(tests);
}

std::string render_bench_md(const BenchInfo& info, const std::vector<BenchTest>& tests) {
  std::string out = render_bench_md_head(info);
  for (const BenchTest& t : tests) out += render_bench_md_row(t);
  return out + render_bench_md_tail(tests);
}

std::string render_collective_md(const std::vector<BenchTest>& tests) {
  std::string out;
  for (const BenchTest& t : tests) {
    if (t.collective_ms.empty() || t.ms.empty()) continue;
    if (out.empty())
      out = "\n| test | collectives ms/rep | share of the rep | MB sent per rep |\n| --- | ---: | ---: | ---: |\n";
    const double coll = summarize(t.collective_ms).median, rep = summarize(t.ms).median;
    double bytes = 0;
    for (uint64_t b : t.collective_bytes) bytes += static_cast<double>(b);
    bytes /= static_cast<double>(t.collective_bytes.size());
    out += "| " + t.name() + " | " + format_double("%.3f", coll) + " | " +
           format_double("%.1f%%", rep > 0 ? 100.0 * coll / rep : 0.0) + " | " + format_double("%.3f", bytes / 1e6) +
           " |\n";
  }
  return out;
}

std::string render_bench_csv_head() {
  return "plan,plan_sha256,device,driver,build_commit,chunk,test,n_prompt,n_gen,rep,ms,tokens_per_s\n";
}

std::string render_bench_csv_rows(const BenchInfo& info, const BenchTest& t) {
  std::string out;
  std::vector<double> ts = tokens_per_s(t);
  for (size_t i = 0; i < t.ms.size(); ++i)
    out += csv_field(info.plan) + "," + info.plan_sha256 + "," + csv_field(info.device) + "," +
           csv_field(info.driver) + "," + csv_field(info.build_commit) + "," + std::to_string(info.chunk) + "," +
           t.name() + "," + std::to_string(t.n_prompt) + "," + std::to_string(t.n_gen) + "," + std::to_string(i) +
           "," + format_double("%.6f", t.ms[i]) + "," + format_double("%.4f", ts[i]) + "\n";
  return out;
}

std::string render_bench_csv(const BenchInfo& info, const std::vector<BenchTest>& tests) {
  std::string out = render_bench_csv_head();
  for (const BenchTest& t : tests) out += render_bench_csv_rows(info, t);
  return out;
}

std::string render_bench_json(const BenchInfo& info, const std::vector<BenchTest>& tests) {
  std::string out = "[\n";
  for (size_t i = 0; i < tests.size(); ++i) out += "  " + test_json(info, tests[i]) + (i + 1 < tests.size() ? ",\n" : "\n");
  return out + "]\n";
}

std::string render_bench_jsonl_row(const BenchInfo& info, const BenchTest& t) { return test_json(info, t) + "\n"; }

std::string render_bench_jsonl(const BenchInfo& info, const std::vector<BenchTest>& tests) {
  std::string out;
  for (const BenchTest& t : tests) out += render_bench_jsonl_row(info, t);
  return out;
}

}  // namespace kern::run
