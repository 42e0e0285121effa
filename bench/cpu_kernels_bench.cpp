// Throughput of the cpu device's hot kernels (the GEMM and decode GEMV twins)
// at Qwen3-0.6B shapes: the figures behind kern-run's time to first token on
// the cpu device (docs/memory-plan.md). Prints a table of the median of
// repeats in ms and in multiply-adds per second (GMAC/s).
//
// Usage: cpu_kernels_bench [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <time.h>

#include "common/bf16.h"
#include "common/extern_ops.h"
#include "kernels-src/cpu/cpu_kernel.h"
#include "test/kernels/arg_pack.h"

namespace {

using kern::cpu::test::ArgPack;

std::vector<uint16_t> random_bf16(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = kern::f32_to_bf16(dist(rng));
  return v;
}

/// CPU time of this process (all threads) in ms: on a shared machine it
/// measures the work where wall time measures the neighbours too.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

struct Times {
  double wall_ms = 0.0;  ///< median wall time of one launch
  double cpu_ms = 0.0;   ///< median CPU time (all threads) of one launch
};

/// Median wall and CPU time in ms of `repeats` launches of `symbol` (after one warm-up).
Times median_ms(const char* symbol, const ArgPack& p, uint32_t gx, uint32_t gy, uint32_t bx, uint64_t smem,
                 int repeats) {
  const kern::cpu::CpuKernel* k = kern::cpu::find_cpu_kernel(symbol);
  if (k == nullptr) {
    std::fprintf(stderr, "cpu_kernels_bench: no cpu kernel %s\n", symbol);
    std::exit(1);
  }
  kern::cpu::CpuLaunch l;
  l.grid[0] = gx;
  l.grid[1] = gy;
  l.block[0] = bx;
  l.shared_mem_bytes = smem;
  l.args = p.data();
  l.num_args = p.size();
  std::vector<double> ms, cpu;
  for (int r = 0; r <= repeats; ++r) {
    const double c0 = cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    const kern::Status s = k->run(l);
    const auto t1 = std::chrono::steady_clock::now();
    const double c1 = cpu_ms();
    if (!s.ok()) {
      std::fprintf(stderr, "cpu_kernels_bench: %s: %s\n", symbol, s.error().message.c_str());
      std::exit(1);
    }
    if (r > 0) {
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      cpu.push_back(c1 - c0);
    }
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu.begin(), cpu.end());
  return {ms[ms.size() / 2], cpu[cpu.size() / 2]};
}

void row(const char* what, int64_t m, int64_t n, int64_t k, Times t) {
  const double macs = static_cast<double>(m) * n * k;
  std::printf("| %-34s | %4lld | %6lld | %5lld | %9.2f | %9.2f | %7.2f | %7.2f |\n", what,
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), t.wall_ms,
              t.cpu_ms, macs / (t.wall_ms * 1e6), macs / (t.cpu_ms * 1e6));
}

void bench_gemm(const char* what, int64_t m, int64_t n, int64_t k, int repeats, std::mt19937& rng) {
  const auto a = random_bf16(rng, static_cast<size_t>(m * k));
  const auto w = random_bf16(rng, static_cast<size_t>(n * k));
  std::vector<uint16_t> c(static_cast<size_t>(m * n));
  ArgPack p;
  p.add(a.data()).add(w.data()).add(c.data()).add<int32_t>(static_cast<int32_t>(m));
  p.add<int32_t>(static_cast<int32_t>(n)).add<int32_t>(static_cast<int32_t>(k));
  row(what, m, n, k, median_ms(kern::extern_op_symbol(kern::ExternOpId::kGemmBf16Tn).data(), p, 1, 1, 1, 0, repeats));
}

void bench_gemv(const char* what, int64_t n, int64_t k, int repeats, std::mt19937& rng) {
  const auto a = random_bf16(rng, static_cast<size_t>(k));
  const auto w = random_bf16(rng, static_cast<size_t>(n * k));
  std::vector<uint16_t> c(static_cast<size_t>(n));
  std::vector<float> partial(1);
  std::vector<int32_t> counters(1);
  ArgPack p;
  p.add(a.data()).add(w.data()).add(c.data()).add(partial.data()).add(counters.data());
  p.add<int32_t>(1).add<int32_t>(static_cast<int32_t>(n)).add<int32_t>(static_cast<int32_t>(k));
  p.add<int32_t>(static_cast<int32_t>(k)).add<int32_t>(static_cast<int32_t>(n)).add<int32_t>(1);
  const auto tiles = static_cast<uint32_t>((n + 7) / 8);
  row(what, 1, n, k, median_ms("kern_gemv_bf16", p, tiles, 1, 128, 0, repeats));
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::mt19937 rng(7);
  std::printf("cpu kernels, Qwen3-0.6B shapes, median of %d; ms wall and ms CPU (all threads);\n"
              "GMAC/s = m*n*k / time, per wall second and per CPU second (per core)\n\n", repeats);
  std::printf("| %-34s | %4s | %6s | %5s | %9s | %9s | %7s | %7s |\n", "kernel", "m", "n", "k", "ms wall",
              "ms CPU", "GMAC/s", "/ core");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(36, '-').c_str(), std::string(6, '-').c_str(),
              std::string(8, '-').c_str(), std::string(7, '-').c_str(), std::string(11, '-').c_str(),
              std::string(11, '-').c_str(), std::string(9, '-').c_str(), std::string(9, '-').c_str());
  bench_gemm("gemm qkv_proj (prefill 31)", 31, 4096, 1024, repeats, rng);
  bench_gemm("gemm gate_up_proj (prefill 31)", 31, 6144, 1024, repeats, rng);
  bench_gemm("gemm down_proj (prefill 31)", 31, 1024, 3072, repeats, rng);
  bench_gemv("gemv gate_up_proj (decode)", 6144, 1024, repeats, rng);
  bench_gemv("gemv lm_head (decode)", 151936, 1024, repeats, rng);
  return 0;
}
