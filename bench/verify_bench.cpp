// Times the kern-verify pipeline on one manifest (default: the Qwen3-4B
// example): read (strict JSON reader) -> verify (SPEC §4) -> lower (.kplan),
// repeated, printing the median and min of each phase in milliseconds.
//
//   verify_bench [MANIFEST.json] [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "common/file_util.h"
#include "common/manifest_reader.h"
#include "common/source.h"
#include "kern-verify/lower.h"
#include "kern-verify/verifier.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "examples/qwen3-4b.json";
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 21;
  auto text = kern::read_file(path);
  if (!text.ok()) {
    std::fprintf(stderr, "error: %s\n", text.error().message.c_str());
    return 2;
  }
  std::vector<double> t_read, t_verify, t_lower, t_total;
  size_t plan_bytes = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    kern::SourceFile file(path, text.value());
    kern::DiagnosticEngine diag;
    auto manifest = kern::read_manifest(file, diag);
    t_read.push_back(ms_since(t0));
    if (!manifest) {
      std::fprintf(stderr, "%s", kern::render_human(diag.diagnostics(), file, false).c_str());
      return 1;
    }
    const auto t1 = Clock::now();
    auto verified = kern::verify::verify(*manifest, diag);
    t_verify.push_back(ms_since(t1));
    if (!verified) {
      std::fprintf(stderr, "%s", kern::render_human(diag.diagnostics(), file, false).c_str());
      return 1;
    }
    const auto t2 = Clock::now();
    auto plan = kern::verify::lower(*verified, file.text());
    t_lower.push_back(ms_since(t2));
    t_total.push_back(ms_since(t0));
    if (!plan.ok()) {
      std::fprintf(stderr, "error: %s\n", plan.error().message.c_str());
      return 2;
    }
    plan_bytes = plan.value().size();
  }
  std::printf("verify_bench %s: %d repeats, %zu manifest bytes, %zu plan bytes\n", path.c_str(), repeats,
              text.value().size(), plan_bytes);
  auto row = [](const char* name, const std::vector<double>& v) {
    std::printf("  %-22s median %8.3f ms   min %8.3f ms\n", name, median(v), *std::min_element(v.begin(), v.end()));
  };
  row("read_manifest", t_read);
  row("verify", t_verify);
  row("lower", t_lower);
  row("total", t_total);
  return 0;
}
