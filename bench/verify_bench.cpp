// Times the kern-verify pipeline: read (strict JSON reader) -> verify (SPEC
// §4) -> lower (.kplan), repeated, printing the median and min of each phase
// in milliseconds of thread CPU time (robust on a loaded machine; the
// pipeline is single-threaded) and the median wall time.
//
//   verify_bench [MANIFEST.json] [REPEATS]            one manifest (default: Qwen3-4B)
//   verify_bench --synthetic N1,N2,... [REPEATS]      generated manifests of N dispatches
//
// The synthetic mode shows how the cost grows with the number of dispatches:
// it prints the per-dispatch cost at each size and its ratio between
// consecutive sizes (1.0 = perfectly linear).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "common/file_util.h"
#include "common/manifest_reader.h"
#include "common/source.h"
#include "kern-verify/lower.h"
#include "kern-verify/verifier.h"

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double wall_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Timings {
  std::vector<double> read, verify, lower, total, wall;
  size_t plan_bytes = 0;
};

/// Runs the pipeline `repeats` times on `text`; false (after printing the
/// diagnostics) when the manifest does not compile.
bool run(const std::string& name, const std::string& text, int repeats, Timings& t) {
  for (int i = 0; i < repeats; ++i) {
    const double w0 = wall_ms();
    const double t0 = thread_cpu_ms();
    kern::SourceFile file(name, text);
    kern::DiagnosticEngine diag;
    auto manifest = kern::read_manifest(file, diag);
    const double t1 = thread_cpu_ms();
    std::optional<kern::verify::VerifiedManifest> verified;
    if (manifest) verified = kern::verify::verify(*manifest, diag);
    const double t2 = thread_cpu_ms();
    if (!verified) {
      std::fprintf(stderr, "%s", kern::render_human(diag.diagnostics(), file, false).c_str());
      return false;
    }
    auto plan = kern::verify::lower(*verified, file.text());
    const double t3 = thread_cpu_ms();
    if (!plan.ok()) {
      std::fprintf(stderr, "error: %s\n", plan.error().message.c_str());
      return false;
    }
    t.read.push_back(t1 - t0);
    t.verify.push_back(t2 - t1);
    t.lower.push_back(t3 - t2);
    t.total.push_back(t3 - t0);
    t.wall.push_back(wall_ms() - w0);
    t.plan_bytes = plan.value().size();
  }
  return true;
}

/// A valid manifest of `n` dispatches: a ping-pong chain through two
/// workspaces alternating a one-step kernel and a two-step kernel with
/// private scratch, the last dispatch writing the output. Every construct
/// the verifier walks per dispatch appears: buffers with offsets, symbol and
/// expression scalars, f32 literals, pinned cubins.
std::string synthetic_manifest(size_t n) {
  const std::string sha(64, 'a');
  std::string step_params = R"(["in buffer<bf16>", "out buffer<bf16>", "i32", "f32"])";
  std::string s;
  s.reserve(n * 140 + 4096);
  s += R"({"meta": {"version": 2, "model": "synthetic"},
"symbols": {"tokens": {"min": 1, "max": 512}},
"buffers": {
  "x": {"dtype": "bf16", "shape": ["tokens", 1024], "class": "input"},
  "a": {"dtype": "bf16", "shape": ["tokens", 1024], "class": "workspace"},
  "b": {"dtype": "bf16", "shape": ["tokens", 1024], "class": "workspace"},
  "y": {"dtype": "bf16", "shape": ["tokens", 1024], "class": "output"}},
"kernels": {
  "scale": {"params": )" + step_params + R"(, "impl": {"steps": [
    {"symbol": "k_scale", "cubin": "k.cubin", "sha256": ")" + sha + R"(", "params": )" + step_params + R"(,
     "block": [256, 1, 1], "grid": [{"ceil_div": [{"mul": [{"sym": "tokens"}, 1024]}, 256]}, 1, 1],
     "args": [{"arg": 0}, {"arg": 1}, {"arg": 2}, {"arg": 3}]}]}},
  "two_pass": {"params": )" + step_params + R"(, "impl": {
    "scratch": {"partial": {"dtype": "f32", "shape": ["tokens", 8]}},
    "steps": [
    {"symbol": "k_pass1", "cubin": "k.cubin", "sha256": ")" + sha + R"(",
     "params": ["in buffer<bf16>", "out buffer<f32>", "i32"],
     "block": [256, 1, 1], "grid": [8, {"sym": "tokens"}, 1], "shared_mem": 4096,
     "args": [{"arg": 0}, {"scratch": "partial"}, {"arg": 2}]},
    {"symbol": "k_pass2", "cubin": "k.cubin", "sha256": ")" + sha + R"(",
     "params": ["in buffer<f32>", "out buffer<bf16>", "f32"],
     "block": [64, 1, 1], "grid": [{"sym": "tokens"}, 1, 1],
     "args": [{"scratch": "partial"}, {"arg": 1}, {"arg": 3}]}]}}},
"programs": {"run": {"dispatches": [
)";
  for (size_t i = 0; i < n; ++i) {
    const char* in = i == 0 ? "x" : (i % 2 ? "a" : "b");
    const char* out = i + 1 == n ? "y" : (i % 2 ? "b" : "a");
    s += "  {\"kernel\": \"";
    s += i % 2 ? "two_pass" : "scale";
    s += "\", \"label\": \"d" + std::to_string(i) + "\", \"args\": [{\"buf\": \"" + in + "\", \"offset\": 0}, ";
    s += "{\"buf\": \"" + std::string(out) + "\"}, ";
    s += i % 3 ? R"({"sym": "tokens"})" : R"({"expr": {"mul": [{"sym": "tokens"}, 2]}})";
    s += ", {\"f32\": 0.5}]}";
    s += i + 1 == n ? "\n" : ",\n";
  }
  s += "]}}}\n";
  return s;
}

void print_row(const char* name, const std::vector<double>& v) {
  std::printf("  %-14s median %9.3f ms   min %9.3f ms\n", name, median(v), *std::min_element(v.begin(), v.end()));
}

int run_manifest(const std::string& path, int repeats) {
  auto text = kern::read_file(path);
  if (!text.ok()) {
    std::fprintf(stderr, "error: %s\n", text.error().message.c_str());
    return 2;
  }
  Timings t;
  if (!run(path, text.value(), repeats, t)) return 1;
  std::printf("verify_bench %s: %d repeats, %zu manifest bytes, %zu plan bytes (thread CPU time)\n", path.c_str(),
              repeats, text.value().size(), t.plan_bytes);
  print_row("read_manifest", t.read);
  print_row("verify", t.verify);
  print_row("lower", t.lower);
  print_row("total", t.total);
  std::printf("  %-14s median %9.3f ms\n", "total (wall)", median(t.wall));
  return 0;
}

int run_synthetic(const std::string& sizes_arg, int repeats) {
  std::vector<size_t> sizes;
  for (size_t pos = 0; pos < sizes_arg.size();) {
    size_t comma = sizes_arg.find(',', pos);
    if (comma == std::string::npos) comma = sizes_arg.size();
    sizes.push_back(std::strtoull(sizes_arg.substr(pos, comma - pos).c_str(), nullptr, 10));
    pos = comma + 1;
  }
  std::printf("verify_bench --synthetic: read + verify + lower, thread CPU time, %d repeats per size\n", repeats);
  std::printf("  %10s %12s %10s %10s %10s %10s %12s\n", "dispatches", "bytes", "read ms", "verify ms", "lower ms",
              "total ms", "us/dispatch");
  std::vector<double> per_dispatch;
  for (size_t n : sizes) {
    if (n == 0) continue;
    const std::string text = synthetic_manifest(n);
    Timings t;
    if (!run("synthetic-" + std::to_string(n) + ".json", text, repeats, t)) return 1;
    const double total = median(t.total);
    per_dispatch.push_back(total * 1e3 / static_cast<double>(n));
    std::printf("  %10zu %12zu %10.3f %10.3f %10.3f %10.3f %12.3f\n", n, text.size(), median(t.read),
                median(t.verify), median(t.lower), total, per_dispatch.back());
  }
  // Small manifests fit in the caches; compare each size with the previous one.
  for (size_t i = 1; i < per_dispatch.size(); ++i) {
    std::printf("  per-dispatch cost, size %zu / size %zu: %.2f (1.00 = linear)\n", i + 1, i,
                per_dispatch[i] / per_dispatch[i - 1]);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--synthetic") {
    const std::string sizes = argc > 2 ? argv[2] : "1000,10000,100000";
    const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
    return run_synthetic(sizes, repeats);
  }
  const std::string path = argc > 1 ? argv[1] : "examples/qwen3-4b.json";
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 21;
  return run_manifest(path, repeats);
}
