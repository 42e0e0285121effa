// kern-gpu-compare: runs every comparison case (kernel_cases.h) on the cpu
// reference kernels and on the GPU, compares, then benchmarks the Qwen3-4B
// shapes. Needs a GPU; without a driver it exits 3 after saying so.
//
//   kern-gpu-compare (--kernels-dir DIR | --cpu-only) [--json FILE] [--reps N] [--seed S]
//
// Exit status: 0 all cases match, 1 a mismatch or a failed launch, 2 bad
// usage, 3 no CUDA driver/device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/bf16.h"
#include "kernels-src/cpu/cpu_kernel.h"
#include "test/gpu/case_compare.h"
#include "test/gpu/gpu_session.h"
#include "test/gpu/kernel_cases.h"

namespace kern::gpu_test {
namespace {

struct Options {
  std::string kernels_dir;
  std::string json_path;
  int reps = 50;
  uint64_t seed = 1;
  bool cpu_only = false;  ///< only check that the cpu reference accepts every case
};

/// GPU-side state of a case: device copies of every buffer, resolved launches.
struct GpuCase {
  std::vector<CUdeviceptr> bufs;
  std::vector<CUfunction> fns;
  std::vector<std::vector<uint64_t>> values;
  std::vector<std::vector<void*>> ptrs;
};

Result<GpuCase> prepare_gpu(GpuSession& s, const Case& c, const std::string& dir) {
  GpuCase g;
  for (const CaseBuffer& b : c.buffers) {
    auto p = s.alloc(b.bytes.size());
    if (!p.ok()) return p.error();
    KERN_RETURN_IF_ERROR(s.upload(p.value(), b.bytes.data(), b.bytes.size()));
    g.bufs.push_back(p.value());
  }
  for (const CaseLaunch& l : c.launches) {
    auto f = s.function(dir + "/" + l.fatbin, l.symbol);
    if (!f.ok()) return f.error();
    g.fns.push_back(f.value());
    std::vector<uint64_t> v(l.args.size());
    for (size_t i = 0; i < l.args.size(); ++i)
      v[i] = l.args[i].buffer >= 0 ? g.bufs[l.args[i].buffer] + l.args[i].offset : l.args[i].bits;
    g.values.push_back(std::move(v));
  }
  for (auto& v : g.values) {
    std::vector<void*> p(v.size());
    for (size_t i = 0; i < v.size(); ++i) p[i] = &v[i];
    g.ptrs.push_back(std::move(p));
  }
  return g;
}

Status launch_all(GpuSession& s, const Case& c, GpuCase& g) {
  for (size_t i = 0; i < c.launches.size(); ++i)
    KERN_RETURN_IF_ERROR(s.launch(g.fns[i], c.launches[i].grid, c.launches[i].block, c.launches[i].shared_mem,
                                  g.ptrs[i].data()));
  return Status::ok_status();
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) o += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
  return o;
}

/// --cpu-only: runs every case on the cpu reference alone (no GPU), so a
/// case the reference rejects (bad geometry, bad params) is caught here and
/// not first on the GPU machine. Also checks that each compared output was
/// written (is no longer all poison).
int run_cpu_only(const Options& opt) {
  std::vector<Case> cases = make_cases(opt.seed);
  int failed = 0;
  for (Case& c : cases) {
    std::vector<std::vector<uint8_t>> before;
    for (const CaseBuffer& b : c.buffers) before.push_back(b.bytes);
    const Status st = run_cpu(c);
    std::string detail = st.ok() ? "" : st.error().message;
    for (size_t i = 0; st.ok() && i < c.buffers.size(); ++i)
      if (c.buffers[i].compare != Compare::kNone && c.buffers[i].bytes == before[i])
        detail = c.buffers[i].name + " unchanged by the launches";
    if (!detail.empty()) ++failed;
    std::printf("%-8s %s %s\n", detail.empty() ? "ok" : "FAIL", c.name.c_str(), detail.c_str());
  }
  std::printf("%zu cases on the cpu reference, %d failed\n", cases.size(), failed);
  return failed ? 1 : 0;
}

/// Bandwidth ceiling: one 1 GiB device-to-device copy timed 10 times, read
/// + write bytes over the median time, in GB/s; 0 when it cannot be measured.
double measure_copy_gbps(GpuSession& s) {
  double copy_gbps = 0;
  const uint64_t n = 1ull << 30;
  auto a = s.alloc(n), b = s.alloc(n);
  if (a.ok() && b.ok()) {
    const auto& api = s.driver().api();
    (void)api.cuMemsetD8Async(a.value(), 1, n, s.stream());
    std::vector<float> t;
    for (int i = 0; i < 10; ++i) {
      auto ms = s.time_ms([&] { return s.driver().check(api.cuMemcpyDtoDAsync(b.value(), a.value(), n, s.stream()), "cuMemcpyDtoDAsync"); });
      if (ms.ok()) t.push_back(ms.value());
    }
    if (!t.empty()) {
      std::sort(t.begin(), t.end());
      copy_gbps = 2.0 * n / (t[t.size() / 2] * 1e-3) / 1e9;
    }
  }
  return copy_gbps;
}

/// One case's outcome: verdict "ok", "error" or "MISMATCH" with its detail,
/// the largest error over the compared buffers, and for a benchmarked case
/// that matched the median launch time (us) and bandwidth (GB/s); -1 when
/// not measured.
struct CaseResult {
  std::string verdict = "ok", detail;
  double max_err = 0, us = -1, gbps = -1;
};

/// Downloads every compared buffer of `c` (run on both sides) and compares
/// it with the cpu reference's bytes, into r.
void compare_outputs(GpuSession& s, const Case& c, const GpuCase& g, CaseResult& r) {
  for (size_t bi = 0; bi < c.buffers.size(); ++bi) {
    if (c.buffers[bi].compare == Compare::kNone) continue;
    std::vector<uint8_t> got(c.buffers[bi].bytes.size());
    Status d = s.download(got.data(), g.bufs[bi], got.size());
    if (!d.ok()) { r.verdict = "error", r.detail = d.error().message; break; }
    Mismatch m = compare(c.buffers[bi], got);
    r.max_err = std::max(r.max_err, m.max_err);
    if (m.bad) {
      r.verdict = "MISMATCH";
      r.detail += (r.detail.empty() ? "" : "; ") + std::to_string(m.bad) + "/" + std::to_string(m.checked) +
                  " differ, first " + m.detail;
    }
  }
}

/// Times `reps` launches of the whole case (warm-up included) and puts the
/// median (us) and the bandwidth it gives for c.bytes_moved (GB/s) in r.
void bench_case(GpuSession& s, const Case& c, GpuCase& g, int reps, CaseResult& r) {
  std::vector<float> t;
  for (int rep = 0; rep < reps; ++rep) {  // warm-up included: median of reps
    auto ms = s.time_ms([&] { return launch_all(s, c, g); });
    if (ms.ok()) t.push_back(ms.value());
  }
  std::sort(t.begin(), t.end());
  if (!t.empty()) r.us = t[t.size() / 2] * 1e3, r.gbps = c.bytes_moved / (r.us * 1e-6) / 1e9;
}

/// Runs `c` on the GPU (from its pristine, poisoned bytes) and on the cpu
/// reference, compares the outputs, and benchmarks it when it matched and
/// c.bench.
CaseResult run_case(GpuSession& s, Case& c, const Options& opt) {
  CaseResult r;
  auto g = prepare_gpu(s, c, opt.kernels_dir);  // from the pristine (poisoned) bytes
  Status st = g.ok() ? launch_all(s, c, g.value()) : Status(g.error());
  if (st.ok()) st = s.synchronize();
  if (st.ok()) st = run_cpu(c);
  if (!st.ok()) {
    r.verdict = "error", r.detail = st.error().message;
  } else {
    compare_outputs(s, c, g.value(), r);
  }
  if (r.verdict == "ok" && c.bench) bench_case(s, c, g.value(), opt.reps, r);
  return r;
}

/// The case's object in the --json report.
std::string case_json(const Case& c, const CaseResult& r) {
  return "{\"name\": \"" + json_escape(c.name) + "\", \"verdict\": \"" + r.verdict + "\", \"detail\": \"" +
         json_escape(r.detail) + "\", \"max_err\": " + std::to_string(r.max_err) +
         ", \"bytes_moved\": " + std::to_string(c.bytes_moved) + ", \"us\": " + std::to_string(r.us) +
         ", \"gbps\": " + std::to_string(r.gbps) + "}";
}

int run(const Options& opt) {
  if (opt.cpu_only) return run_cpu_only(opt);
  auto session = GpuSession::open();
  if (!session.ok()) {
    std::fprintf(stderr, "kern-gpu-compare: %s\n", session.error().message.c_str());
    return 3;
  }
  GpuSession& s = *session.value();
  std::printf("device: %s\n", s.description().c_str());
  const double copy_gbps = measure_copy_gbps(s);
  std::vector<Case> cases = make_cases(opt.seed);
  int failed = 0;
  std::string json = "{\"device\": \"" + json_escape(s.description()) + "\", \"copy_gbps\": " +
                     std::to_string(copy_gbps) + ", \"cases\": [";
  std::string table;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    Case& c = cases[ci];
    const CaseResult r = run_case(s, c, opt);
    if (r.verdict != "ok") ++failed;
    std::printf("%-8s %-60s max_err %.3g %s\n", r.verdict.c_str(), c.name.c_str(), r.max_err, r.detail.c_str());
    char row[200];
    if (c.bench && r.us >= 0) {
      std::snprintf(row, sizeof row, "%-60s %9.2f us %8.1f GB/s %5.1f%%\n", c.name.c_str(), r.us, r.gbps,
                    copy_gbps > 0 ? 100.0 * r.gbps / copy_gbps : 0.0);
      table += row;
    }
    json += std::string(ci ? ", " : "") + case_json(c, r);
  }
  json += "], \"failed\": " + std::to_string(failed) + "}\n";
  if (!opt.json_path.empty()) std::ofstream(opt.json_path) << json;
  std::printf("\n%zu cases, %d failed; d2d copy ceiling %.0f GB/s\n", cases.size(), failed, copy_gbps);
  std::printf("%-60s %12s %13s %6s\n%s", "benchmark (median of launches)", "time", "bandwidth", "ceil", table.c_str());
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace kern::gpu_test

int main(int argc, char** argv) {
  kern::gpu_test::Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--cpu-only") opt.cpu_only = true;
    else if (a == "--kernels-dir" && has_value) opt.kernels_dir = argv[++i];
    else if (a == "--json" && has_value) opt.json_path = argv[++i];
    else if (a == "--reps" && has_value) opt.reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--seed" && has_value) opt.seed = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: kern-gpu-compare (--kernels-dir DIR | --cpu-only) [--json FILE] [--reps N] [--seed S]\n");
      return 2;
    }
  }
  if (opt.kernels_dir.empty() && !opt.cpu_only) {
    std::fprintf(stderr, "kern-gpu-compare: --kernels-dir is required\n");
    return 2;
  }
  return kern::gpu_test::run(opt);
}
