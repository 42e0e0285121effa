// Throughput of the cpu device's hot kernels (the GEMM and decode GEMV twins)
// at Qwen3-0.6B shapes: the figures behind kern-run's time to first token on
// the cpu device (docs/memory-plan.md). Prints tables of the median of
// repeats in ms and in multiply-adds per second (GMAC/s); then the fused
// decode GEMVs (the ones the 0.6B decode program launches, with its splits)
// at m = 1..8 rows, one decode step's GEMV time per batch size (28 layers +
// lm_head) against batch 1, and the GEMV lane-dot paths (gemv_lanes.h)
// this machine runs, side by side, with w in the last-level cache and
// streamed from memory (as a decode step reads its weights).
//
// Usage: cpu_kernels_bench [REPEATS] [streamed-step]
// (streamed-step: only the last table, one decode step with the weights
// streamed from memory)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

#include "common/bf16.h"
#include "common/extern_ops.h"
#include "kernels-src/cpu/cpu_kernel.h"
#include "kernels-src/cpu/gemv_lanes.h"
#include "kernels-src/cpu/gemv_packed.h"
#include "kernels-src/cpu/parallel.h"
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

/// One fused decode GEMV of the 0.6B decode program (examples/qwen3-0.6b.json).
struct DecodeGemv {
  const char* what;
  const char* symbol;
  bool norm, argmax;
  int64_t n, k, splits, w_rows;  ///< w_rows: n, or 2n for SiLU*mul
  int64_t per_step;              ///< launches per decode step (28 layers, or 1)
};

/// Median times of `g` at m rows (every buffer sized for m; a, w random).
Times time_decode_gemv(const DecodeGemv& g, int64_t m, int repeats, std::mt19937& rng) {
  const auto a = random_bf16(rng, static_cast<size_t>(m * g.k));
  const auto nw = random_bf16(rng, static_cast<size_t>(g.k));
  const auto w = random_bf16(rng, static_cast<size_t>(g.w_rows * g.k));
  auto c = random_bf16(rng, static_cast<size_t>(m * g.n));
  const int64_t tiles = (g.n + 7) / 8;
  std::vector<float> partial(static_cast<size_t>(std::max<int64_t>(1, g.splits * m * g.w_rows)));
  std::vector<int32_t> counters(static_cast<size_t>(tiles + (g.argmax ? 1 : 0)));  // argmax: + its done counter
  std::vector<float> val(static_cast<size_t>(m * tiles));
  std::vector<int32_t> idx(static_cast<size_t>(m * tiles));
  std::vector<int64_t> next_token(static_cast<size_t>(m));
  ArgPack p;
  p.add(a.data());
  if (g.norm) p.add(nw.data());
  p.add(w.data()).add(c.data()).add(partial.data()).add(counters.data());
  if (g.argmax) p.add(val.data()).add(idx.data()).add(next_token.data());
  p.add<int32_t>(static_cast<int32_t>(m)).add<int32_t>(static_cast<int32_t>(g.n)).add<int32_t>(static_cast<int32_t>(g.k));
  p.add<int32_t>(static_cast<int32_t>(g.k)).add<int32_t>(static_cast<int32_t>(g.n));
  p.add<int32_t>(static_cast<int32_t>(g.splits));
  if (g.norm) p.add(1e-6f);
  return median_ms(g.symbol, p, static_cast<uint32_t>(tiles), static_cast<uint32_t>(g.splits), 128,
                   g.norm ? static_cast<uint64_t>(m * g.k * 2) : 0, repeats);
}

/// The fused decode GEMVs of the 0.6B decode program, in program order.
const DecodeGemv kDecodeGemvs[5] = {
    {"rmsnorm+qkv_proj", "kern_gemv_rmsnorm_bf16", true, false, 4096, 1024, 1, 4096, 28},
    {"o_proj (acc)", "kern_gemv_acc_bf16", false, false, 1024, 2048, 3, 1024, 28},
    {"rmsnorm+gate_up+silu_mul", "kern_gemv_rmsnorm_silu_mul_bf16", true, false, 3072, 1024, 1, 6144, 28},
    {"down_proj (acc)", "kern_gemv_acc_bf16", false, false, 1024, 3072, 3, 1024, 28},
    {"rmsnorm+lm_head+argmax", "kern_gemv_rmsnorm_argmax_bf16", true, true, 151936, 1024, 1, 151936, 1},
};

/// The fused decode GEMVs at m = 1..8 and one decode step's GEMV time per m.
void bench_decode_batches(int repeats, std::mt19937& rng) {
  const auto& gemvs = kDecodeGemvs;
  std::printf("\nfused decode GEMVs of the Qwen3-0.6B decode program at m rows (lane-dot path: %s);\n"
              "x m=1: CPU time against the same GEMV at m = 1 (weights read once for all rows)\n\n",
              kern::cpu::gemv_isa_name(kern::cpu::gemv_best_isa()));
  std::printf("| %-26s | %2s | %6s | %4s | %6s | %8s | %8s | %6s |\n", "gemv", "m", "n", "k", "splits", "ms wall",
              "ms CPU", "x m=1");
  std::printf("|%s|----|--------|------|--------|----------|----------|--------|\n", std::string(28, '-').c_str());
  double step_cpu[9] = {}, step_wall[9] = {};
  for (const DecodeGemv& g : gemvs) {
    double base = 0.0;
    for (int64_t m = 1; m <= 8; ++m) {
      const Times t = time_decode_gemv(g, m, repeats, rng);
      if (m == 1) base = t.cpu_ms;
      step_cpu[m] += static_cast<double>(g.per_step) * t.cpu_ms;
      step_wall[m] += static_cast<double>(g.per_step) * t.wall_ms;
      std::printf("| %-26s | %2lld | %6lld | %4lld | %6lld | %8.3f | %8.3f | %6.2f |\n", g.what,
                  static_cast<long long>(m), static_cast<long long>(g.n), static_cast<long long>(g.k),
                  static_cast<long long>(g.splits), t.wall_ms, t.cpu_ms, t.cpu_ms / base);
    }
  }
  std::printf("\none decode step's GEMVs (28 x the four layer GEMVs + lm_head) at batch m\n\n");
  std::printf("| batch m | ms wall | ms CPU | x batch 1 (CPU) | ms CPU / row |\n");
  std::printf("|---------|---------|--------|-----------------|--------------|\n");
  for (int m = 1; m <= 8; ++m)
    std::printf("| %7d | %7.1f | %6.1f | %15.2f | %12.1f |\n", m, step_wall[m], step_cpu[m], step_cpu[m] / step_cpu[1],
                step_cpu[m] / m);
}

/// Fills `n` bf16 values in 0.5 .. 1.0 (positive, finite) by xorshift32:
/// hundreds of MB in about a second, where random_bf16's mt19937 takes many.
std::vector<uint16_t> quick_bf16(size_t n, uint32_t seed) {
  std::vector<uint16_t> v(n);
  uint32_t x = seed | 1u;
  for (auto& e : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    e = static_cast<uint16_t>(0x3f00u + (x & 0xffu));
  }
  return v;
}

/// One launch of a DecodeGemv at m rows with its own w (`w_seed`) and
/// buffers: what the streamed step runs 28 times per layer GEMV.
struct GemvLaunch {
  const kern::cpu::CpuKernel* kernel = nullptr;
  std::vector<uint16_t> a, nw, w, c;
  std::vector<float> partial, val;
  std::vector<int32_t> counters, idx;
  std::vector<int64_t> next_token;
  ArgPack p;
  kern::cpu::CpuLaunch l;

  GemvLaunch(const DecodeGemv& g, int64_t m, uint32_t w_seed)
      : kernel(kern::cpu::find_cpu_kernel(g.symbol)),
        a(quick_bf16(static_cast<size_t>(m * g.k), w_seed + 1)),
        nw(quick_bf16(static_cast<size_t>(g.k), w_seed + 2)),
        w(quick_bf16(static_cast<size_t>(g.w_rows * g.k), w_seed)),
        c(static_cast<size_t>(m * g.n)),
        partial(static_cast<size_t>(std::max<int64_t>(1, g.splits * m * g.w_rows))),
        val(static_cast<size_t>(m * ((g.n + 7) / 8))),
        counters(static_cast<size_t>((g.n + 7) / 8 + 1)),
        idx(val.size()),
        next_token(static_cast<size_t>(m)) {
    p.add(a.data());
    if (g.norm) p.add(nw.data());
    p.add(w.data()).add(c.data()).add(partial.data()).add(counters.data());
    if (g.argmax) p.add(val.data()).add(idx.data()).add(next_token.data());
    p.add<int32_t>(static_cast<int32_t>(m)).add<int32_t>(static_cast<int32_t>(g.n));
    p.add<int32_t>(static_cast<int32_t>(g.k)).add<int32_t>(static_cast<int32_t>(g.k));
    p.add<int32_t>(static_cast<int32_t>(g.n)).add<int32_t>(static_cast<int32_t>(g.splits));
    if (g.norm) p.add(1e-6f);
    if (kernel == nullptr) {
      std::fprintf(stderr, "cpu_kernels_bench: no cpu kernel %s\n", g.symbol);
      std::exit(1);
    }
    l.grid[0] = static_cast<uint32_t>((g.n + 7) / 8);
    l.grid[1] = static_cast<uint32_t>(g.splits);
    l.block[0] = 128;
    l.shared_mem_bytes = g.norm ? static_cast<uint64_t>(m * g.k * 2) : 0;
    l.args = p.data();
    l.num_args = p.size();
  }
};

/// One decode step's GEMVs as the 0.6B decode program runs them, with the
/// weights streamed from memory: 28 layers with their own w each (1.2 GB
/// with lm_head, far more than any last-level cache; the table above reuses
/// one w per GEMV, which then stays cached), the launches in program order.
/// Per GEMV kind, the median over `repeats` steps (after one warm-up) of its
/// summed wall time in a step, at batch m = 1, 2, 4, 8; and against m = 1.
void bench_decode_streamed(const DecodeGemv (&gemvs)[5], int repeats) {
  constexpr int kLayers = 28;
  constexpr int64_t kMs[] = {1, 2, 4, 8};
  std::printf("\none decode step's GEMVs with the weights streamed (28 layers' own w, 1.2 GB), ms wall per step;"
              " median of %d steps\n\n", repeats);
  std::printf("| %-26s |", "gemv");
  for (const int64_t m : kMs) std::printf("   m=%lld ms |", static_cast<long long>(m));
  std::printf(" m=8 / m=1 |\n|%s|", std::string(28, '-').c_str());
  for (size_t i = 0; i < std::size(kMs); ++i) std::printf("----------|");
  std::printf("-----------|\n");
  double med[5][std::size(kMs)] = {};
  for (size_t mi = 0; mi < std::size(kMs); ++mi) {
    const int64_t m = kMs[mi];
    std::vector<std::vector<std::unique_ptr<GemvLaunch>>> launches(5);
    for (size_t gi = 0; gi < 5; ++gi)
      for (int layer = 0; layer < (gemvs[gi].per_step > 1 ? kLayers : 1); ++layer)
        launches[gi].push_back(
            std::make_unique<GemvLaunch>(gemvs[gi], m, static_cast<uint32_t>(1000 * gi + 10 * layer + 7)));
    std::vector<double> per[5];
    for (int r = 0; r <= repeats; ++r) {
      double sum[5] = {};
      const auto run = [&](size_t gi, size_t layer) {
        GemvLaunch& g = *launches[gi][layer];
        const auto t0 = std::chrono::steady_clock::now();
        const kern::Status s = g.kernel->run(g.l);
        sum[gi] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!s.ok()) {
          std::fprintf(stderr, "cpu_kernels_bench: %s: %s\n", gemvs[gi].symbol, s.error().message.c_str());
          std::exit(1);
        }
      };
      for (size_t layer = 0; layer < kLayers; ++layer)
        for (size_t gi = 0; gi < 4; ++gi) run(gi, layer);
      run(4, 0);
      if (r > 0)
        for (size_t gi = 0; gi < 5; ++gi) per[gi].push_back(sum[gi]);
    }
    for (size_t gi = 0; gi < 5; ++gi) {
      std::sort(per[gi].begin(), per[gi].end());
      med[gi][mi] = per[gi][per[gi].size() / 2];
    }
  }
  double total[std::size(kMs)] = {};
  for (size_t gi = 0; gi < 5; ++gi) {
    std::printf("| %-26s |", gemvs[gi].what);
    for (size_t mi = 0; mi < std::size(kMs); ++mi) {
      std::printf(" %8.2f |", med[gi][mi]);
      total[mi] += med[gi][mi];
    }
    std::printf(" %9.2f |\n", med[gi][std::size(kMs) - 1] / med[gi][0]);
  }
  std::printf("| %-26s |", "step (sum of the medians)");
  for (const double t : total) std::printf(" %8.2f |", t);
  std::printf(" %9.2f |\n", total[std::size(kMs) - 1] / total[0]);
}

/// The lane-dot paths (portable = the scalar statement of the order) on a
/// [4096, 1024] w, all m rows per w row, one split.
void bench_lane_paths(int repeats, std::mt19937& rng) {
  constexpr int64_t kN = 4096, kK = 1024;
  const auto w = random_bf16(rng, static_cast<size_t>(kN * kK));
  std::printf("\nGEMV lane-dot paths (gemv_lanes.h, identical bits), [%lld, %lld] w, one thread; ms CPU\n\n",
              static_cast<long long>(kN), static_cast<long long>(kK));
  std::printf("| path        | m | ms CPU | GMAC/s | w GB/s |\n|-------------|---|--------|--------|--------|\n");
  for (const auto isa : {kern::cpu::GemvIsa::kPortable, kern::cpu::GemvIsa::kAvx2, kern::cpu::GemvIsa::kAvx512,
                         kern::cpu::GemvIsa::kAvx512Bf16}) {
    if (!kern::cpu::gemv_isa_supported(isa)) continue;
    for (const int64_t m : {1, 2, 4, 8}) {
      std::vector<float> a(static_cast<size_t>(m * kK));
      for (size_t x = 0; x < a.size(); ++x) a[x] = kern::bf16_to_f32(random_bf16(rng, 1)[0]);
      std::vector<float> out(static_cast<size_t>(m * kN));
      std::vector<double> cpu;
      for (int r = 0; r <= repeats; ++r) {
        const double c0 = cpu_ms();
        const kern::cpu::GemvLaneDots dots(a.data(), m, kK, 1, isa);
        dots.dots(w.data(), kN, out.data());
        if (r > 0) cpu.push_back(cpu_ms() - c0);
      }
      std::sort(cpu.begin(), cpu.end());
      const double ms = cpu[cpu.size() / 2];
      std::printf("| %-11s | %lld | %6.2f | %6.2f | %6.2f |\n", kern::cpu::gemv_isa_name(isa),
                  static_cast<long long>(m), ms, static_cast<double>(m * kN * kK) / (ms * 1e6),
                  static_cast<double>(kN * kK * 2) / (ms * 1e6));
    }
  }
}

/// The AVX-512 / AVX2 / portable lane dots (the best this machine has) over
/// a [131072, 1024] w (256 MB, more than any last-level cache: each call
/// streams it from memory, as a decode step reads its weights), 32 w rows per
/// dots() call as gemv.cpp's compute_columns, on 1 and 2 threads, from the
/// row-major w (transposed in registers) and from its packed copy
/// (gemv_packed.h, as the cpu device makes at load), the two in turn; median
/// wall ms of `repeats` after one warm-up.
void bench_lane_streamed(int repeats) {
  constexpr int64_t kN = 131072, kK = 1024, kChunk = 32;
  const std::vector<uint16_t> w = quick_bf16(static_cast<size_t>(kN * kK), 12345);
  const kern::cpu::GemvIsa isa = kern::cpu::gemv_best_isa();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  kern::cpu::GemvPackedStore store;
  const auto t0 = std::chrono::steady_clock::now();
  if (!store.add(w.data(), kN, kK, 1, cores).ok()) {
    std::fprintf(stderr, "cpu_kernels_bench: packing the streamed w failed\n");
    std::exit(1);
  }
  const double pack_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const kern::cpu::PackedGemvW* packed = store.find(w.data(), kN, kK, 1);
  std::printf("\nGEMV lane dots (%s) on a w streamed from memory: [%lld, %lld] w (256 MB), %lld w rows per call;"
              " ms wall; row-major w and its packed copy (packed in %.0f ms on %u threads)\n\n",
              kern::cpu::gemv_isa_name(isa), static_cast<long long>(kN), static_cast<long long>(kK),
              static_cast<long long>(kChunk), pack_ms, cores);
  std::printf("| threads | m | w | ms wall | GMAC/s | w GB/s | x row-major |\n|---|---|---|---|---|---|---|\n");
  for (const unsigned threads : {1u, 2u}) {
    if (threads > cores) continue;
    for (const int64_t m : {1, 2, 4, 8}) {
      std::vector<float> a(static_cast<size_t>(m * kK), 0.25f), out(static_cast<size_t>(m * kN));
      const kern::cpu::GemvLaneDots dots(a.data(), m, kK, 1, isa);
      std::vector<double> ms[2];
      for (int r = 0; r <= repeats; ++r)
        for (const int layout : {0, 1}) {  // in turn: both see the same moments of other work
          const auto s0 = std::chrono::steady_clock::now();
          kern::cpu::run_ranges(kN, threads, [&](unsigned, int64_t b, int64_t e) {
            for (int64_t c = b; c < e; c += kChunk) {
              const int64_t rows = std::min(kChunk, e - c);
              if (layout == 0)
                dots.dots(w.data() + c * kK, rows, out.data() + c * m, e - c);
              else
                dots.dots_packed(packed->data + c * kK, rows, out.data() + c * m, e - c, packed->w_min1,
                                 packed->w_max);
            }
          });
          if (r > 0)
            ms[layout].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count());
        }
      double med[2];
      for (int layout : {0, 1}) {
        std::sort(ms[layout].begin(), ms[layout].end());
        med[layout] = ms[layout][ms[layout].size() / 2];
      }
      for (int layout : {0, 1})
        std::printf("| %u | %lld | %s | %.2f | %.2f | %.2f | %.2f |\n", threads, static_cast<long long>(m),
                    layout == 0 ? "row-major" : "packed", med[layout],
                    static_cast<double>(m * kN * kK) / (med[layout] * 1e6),
                    static_cast<double>(kN * kK * 2) / (med[layout] * 1e6), med[layout] / med[0]);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  if (argc > 2 && std::string(argv[2]) == "streamed-step") {
    bench_decode_streamed(kDecodeGemvs, repeats);
    return 0;
  }
  if (argc > 2) {
    std::fprintf(stderr, "cpu_kernels_bench: unknown table '%s' (usage: cpu_kernels_bench [REPEATS] [streamed-step])\n",
                 argv[2]);
    return 2;
  }
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
  bench_decode_batches(repeats, rng);
  bench_lane_paths(repeats, rng);
  bench_lane_streamed(repeats);
  bench_decode_streamed(kDecodeGemvs, repeats);
  return 0;
}
