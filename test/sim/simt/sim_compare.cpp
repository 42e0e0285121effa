// kern-sim-compare: every GPU comparison case (test/gpu/kernel_cases.h) run
// on the SIMT emulator (the real .cu kernels, sim_api.h) and on the cpu
// reference, compared. A case whose kernels the emulator computes in the cpu
// twin's order (sim_exact below, docs/kernels.md) must match bit for bit; the
// others within the harness tolerance. Any emulator violation (race, bounds,
// alignment, PDL, counters) fails the case.
//
//   kern-sim-compare [--seed S] [--block-order-seed N] [--filter TEXT] [--jobs N] [--pdl-manifest FILE]...
//
// --jobs: the cases run in N worker processes (default: as many as the
// CPUs this process may use), each taking the next case when it finishes
// one, the few memory-heavy ones (kHeavyBytes) one at a time; the report
// lists the cases in their order whatever N (with N = 1 as each finishes).
//
// --pdl-manifest: every kernel a step of FILE marks "pdl": true is launched
// as a PDL launch, and every buffer of a case counts as written by an
// earlier launch, so each such kernel's pdl_wait() placement is checked
// (nothing read or written before it), and a pdl kernel that never calls
// pdl_wait() fails. Exit status: 0 all
// cases pass, 1 a mismatch or violation, 2 bad usage.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rapidjson/document.h>

#include "test/gpu/case_compare.h"
#include "test/gpu/kernel_cases.h"
#include "test/sim/simt/sim_api.h"

namespace kern::sim {
namespace {

using gpu_test::Case;
using gpu_test::CaseBuffer;
using gpu_test::Compare;

/// Kernels whose emulated result equals the cpu twin's bit for bit: the twin
/// computes the same f32 operations in the same order (docs/kernels.md "GPU
/// result vs cpu twin"). The emulator differs from nvcc's code only in FMA
/// contraction (off here, as in the twins) and __expf (expf here). Not here:
/// the RMSNorm family and qk_norm_rope_cache (a shuffle-tree sum of squares,
/// the twin sums in index order) and attention (split online softmax).
const std::set<std::string> kSimExact = {
    "kern_embedding_bf16", "kern_decode_advance", "kern_last_row", "kern_decode_advance_batch", "kern_reshape_and_cache_bf16",
    "kern_argmax_partial_bf16",
    "kern_argmax_reduce", "kern_silu_and_mul_bf16", "kern_rope_bf16", "kern_gemv_bf16", "kern_gemv_acc_bf16",
    "kern_gemv_residual_bf16", "kern_gemv_silu_mul_bf16", "kern_gemv_rmsnorm_bf16",
    "kern_gemv_rmsnorm_silu_mul_bf16", "kern_gemv_rmsnorm_argmax_bf16", "kern_sample_bf16", "kern_bias_add_bf16",
    "kern_moe_router_bf16", "kern_moe_gate_up_bf16", "kern_moe_down_bf16",
};

bool sim_exact(const Case& c) {
  for (const auto& l : c.launches)
    if (!kSimExact.count(l.symbol)) return false;
  return true;
}

struct Options {
  uint64_t seed = 1, block_order_seed = 0;
  std::string filter;
  std::set<std::string> pdl_symbols;  ///< kernels some manifest step launches with PDL
  unsigned jobs = 1;                  ///< worker processes (--jobs; default: the CPUs this process may use)
};

/// The CPUs this process may run on (its affinity mask), at least 1.
unsigned usable_cpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

/// Adds the symbol of every object under `v` holding "pdl": true.
void collect_pdl(const rapidjson::Value& v, std::set<std::string>& out) {
  if (v.IsObject()) {
    auto pdl = v.FindMember("pdl");
    auto sym = v.FindMember("symbol");
    if (pdl != v.MemberEnd() && pdl->value.IsTrue() && sym != v.MemberEnd() && sym->value.IsString())
      out.insert(sym->value.GetString());
    for (auto& m : v.GetObject()) collect_pdl(m.value, out);
  } else if (v.IsArray()) {
    for (auto& e : v.GetArray()) collect_pdl(e, out);
  }
}

/// The PDL kernels of manifest `path`; false (with a message) when unreadable.
bool read_pdl_manifest(const char* path, std::set<std::string>& out) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  rapidjson::Document d;
  if (!f || d.Parse(ss.str().c_str()).HasParseError()) {
    std::fprintf(stderr, "kern-sim-compare: %s: not a readable JSON manifest\n", path);
    return false;
  }
  collect_pdl(d, out);
  return true;
}

/// Runs `c`'s launches on the emulator over copies of its buffers; returns the
/// violation or error ("" when none), the buffers' final bytes in `out`.
std::string run_sim(const Case& c, const Options& opt, std::vector<std::vector<uint8_t>>& out) {
  reset_memory();
  out.clear();
  for (const CaseBuffer& b : c.buffers) out.emplace_back(b.bytes);
  // The harness uploads every buffer; checking PDL, they count as produced
  // by the previous program's launches instead (strictest: weights too).
  for (auto& b : out) {
    on_alloc(b.data(), b.size());
    if (opt.pdl_symbols.empty()) on_write(b.data(), b.size());
    else on_launch_write(b.data(), b.size());
  }
  for (size_t li = 0; li < c.launches.size(); ++li) {
    const auto& l = c.launches[li];
    const KernelEntry* k = find_kernel(l.symbol);
    if (!k) return l.symbol + ": no emulated kernel";
    if (k->param_sizes.size() != l.args.size())
      return l.symbol + ": the case passes " + std::to_string(l.args.size()) + " parameters, the kernel takes " +
             std::to_string(k->param_sizes.size());
    std::vector<uint64_t> values(l.args.size());
    std::vector<void*> ptrs(l.args.size());
    for (size_t i = 0; i < l.args.size(); ++i) {
      const auto& a = l.args[i];
      if (a.buffer < 0 && a.size != k->param_sizes[i])
        return l.symbol + ": parameter " + std::to_string(i) + " is " + std::to_string(a.size) +
               " bytes in the case, " + std::to_string(k->param_sizes[i]) + " in the kernel";
      values[i] = a.buffer >= 0 ? reinterpret_cast<uint64_t>(out[a.buffer].data() + a.offset) : a.bits;
      ptrs[i] = &values[i];  // little-endian: a 4- or 1-byte scalar is the low bytes
    }
    LaunchParams lp;
    lp.grid = {l.grid[0], l.grid[1], l.grid[2]};
    lp.block = {l.block[0], l.block[1], l.block[2]};
    lp.dynamic_shared_bytes = l.shared_mem;
    lp.pdl = opt.pdl_symbols.count(l.symbol) > 0;
    lp.block_order_seed = opt.block_order_seed ? opt.block_order_seed + li : 0;
    const std::string e = k->launch(lp, ptrs.data());
    if (!e.empty()) return e;
  }
  reset_memory();
  return "";
}

/// One case's result: its report line, and how it counts.
struct Outcome {
  enum Kind : uint32_t { kFailed, kExact, kTolerant };
  Kind kind = kFailed;
  std::string line;
};

/// Runs case `c` on the emulator and the cpu reference and compares them.
Outcome run_case(Case& c, const Options& opt) {
  std::vector<std::vector<uint8_t>> got;
  std::string detail = run_sim(c, opt, got);
  const bool want_exact = sim_exact(c);
  bool all_exact = true;
  double max_err = 0;
  if (detail.empty()) {
    const Status st = gpu_test::run_cpu(c);
    if (!st.ok()) detail = st.error().message;
  }
  for (size_t i = 0; detail.empty() && i < c.buffers.size(); ++i) {
    if (c.buffers[i].compare == Compare::kNone) continue;
    const gpu_test::Mismatch m = gpu_test::compare(c.buffers[i], got[i], want_exact);
    all_exact = all_exact && m.bit_exact;
    max_err = std::max(max_err, m.max_err);
    if (m.bad)
      detail = std::to_string(m.bad) + "/" + std::to_string(m.checked) + " differ" +
               (want_exact ? " (bit-exact expected)" : "") + ", first " + m.detail;
  }
  const bool ok = detail.empty();
  char head[160];
  std::snprintf(head, sizeof head, "%-8s %-6s %-60s max_err %.3g ", ok ? "ok" : "FAIL",
                want_exact ? "exact" : (all_exact ? "equal" : "tol"), c.name.c_str(), max_err);
  return {!ok ? Outcome::kFailed : want_exact ? Outcome::kExact : Outcome::kTolerant, head + detail};
}

/// A worker's report of one case on the shared pipe: this header, then
/// `len` bytes of line. Header and line go in one write() of at most
/// PIPE_BUF bytes, which POSIX makes atomic, so the workers' records never
/// interleave.
struct Record {
  uint32_t index, kind, len;
};

/// A case whose buffers exceed this is heavy: the emulator holds about ten
/// times its bytes (the buffers, the copy it runs on, 8 bytes of shadow per
/// byte), 8.8 GB for the 151936-row lm_head gemv, so heavy cases run one
/// at a time whatever the number of workers.
constexpr size_t kHeavyBytes = size_t{256} << 20;

/// The queues the workers share (an anonymous shared mapping): the next
/// heavy and light case to take, and whether a worker is running a heavy one.
struct Queues {
  std::atomic<size_t> next_heavy{0}, next_light{0};
  std::atomic<int> heavy_busy{0};
};

/// Runs cases[i] for each i of `todo` in `jobs` forked worker processes
/// (the emulator's state is per process; each case starts from a reset
/// emulator either way) and returns the outcomes in `todo`'s order, so the
/// report reads the same for any `jobs`. Each worker takes the next heavy
/// case when no other worker runs one, else the next light case, in list
/// order. A case whose worker died has the FAIL outcome "no result: ...".
std::vector<Outcome> run_pool(std::vector<Case>& cases, const std::vector<size_t>& todo, const Options& opt,
                              int jobs) {
  std::vector<size_t> heavy, light;  // positions in todo
  for (size_t k = 0; k < todo.size(); ++k) {
    size_t bytes = 0;
    for (const CaseBuffer& b : cases[todo[k]].buffers) bytes += b.bytes.size();
    (bytes > kHeavyBytes ? heavy : light).push_back(k);
  }
  std::vector<Outcome> out(todo.size());
  void* shared = ::mmap(nullptr, sizeof(Queues), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  int fds[2];
  if (shared == MAP_FAILED || ::pipe(fds) != 0) {
    std::perror("kern-sim-compare: mmap/pipe");
    std::exit(2);
  }
  Queues* q = new (shared) Queues;
  std::fflush(stdout);  // nothing buffered is printed twice
  std::vector<pid_t> workers;
  for (int w = 0; w < jobs; ++w) {
    const pid_t pid = ::fork();
    if (pid < 0) break;
    if (pid != 0) {
      workers.push_back(pid);
      continue;
    }
    ::close(fds[0]);
    auto report = [&](size_t k) {
      Outcome o = run_case(cases[todo[k]], opt);
      o.line.resize(std::min(o.line.size(), PIPE_BUF - sizeof(Record)));
      std::string rec(sizeof(Record), '\0');
      const Record r{static_cast<uint32_t>(k), o.kind, static_cast<uint32_t>(o.line.size())};
      std::memcpy(rec.data(), &r, sizeof r);
      rec += o.line;
      if (::write(fds[1], rec.data(), rec.size()) != static_cast<ssize_t>(rec.size())) ::_exit(3);
    };
    for (;;) {
      if (q->next_heavy < heavy.size() && q->heavy_busy.exchange(1) == 0) {
        const size_t h = q->next_heavy++;
        if (h < heavy.size()) report(heavy[h]);
        q->heavy_busy = 0;
        if (h < heavy.size()) continue;
      }
      if (const size_t l = q->next_light++; l < light.size()) {
        report(light[l]);
        continue;
      }
      if (q->next_heavy >= heavy.size()) break;
      ::usleep(100000);  // only heavy cases are left, and another worker runs one
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string data;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  std::vector<bool> have(todo.size());
  for (size_t at = 0; at + sizeof(Record) <= data.size();) {
    Record r;
    std::memcpy(&r, data.data() + at, sizeof r);
    at += sizeof r;
    if (r.index < todo.size()) {
      out[r.index] = {static_cast<Outcome::Kind>(r.kind), data.substr(at, r.len)};
      have[r.index] = true;
    }
    at += r.len;
  }
  std::string died;
  for (pid_t pid : workers) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) died += " (a worker process died of signal " + std::to_string(WTERMSIG(status)) + ")";
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      died += " (a worker process exited " + std::to_string(WEXITSTATUS(status)) + ")";
  }
  if (workers.empty()) died = " (no worker process could be started)";
  for (size_t k = 0; k < todo.size(); ++k) {
    if (have[k]) continue;
    char head[160];
    std::snprintf(head, sizeof head, "%-8s %-6s %-60s ", "FAIL", "-", cases[todo[k]].name.c_str());
    out[k] = {Outcome::kFailed, head + std::string("no result") + died};
  }
  q->~Queues();
  ::munmap(shared, sizeof(Queues));
  return out;
}

int run(const Options& opt) {
  std::vector<Case> cases = gpu_test::make_cases(opt.seed);
  std::vector<size_t> todo;
  for (size_t i = 0; i < cases.size(); ++i)
    if (opt.filter.empty() || cases[i].name.find(opt.filter) != std::string::npos) todo.push_back(i);
  const int jobs = static_cast<int>(std::min<size_t>(opt.jobs, todo.size()));
  std::vector<Outcome> outcomes;
  if (jobs <= 1) {
    for (size_t i : todo) {
      outcomes.push_back(run_case(cases[i], opt));
      std::printf("%s\n", outcomes.back().line.c_str());
      std::fflush(stdout);
    }
  } else {
    outcomes = run_pool(cases, todo, opt, jobs);
    for (const Outcome& o : outcomes) std::printf("%s\n", o.line.c_str());
  }
  int failed = 0, exact = 0, tolerant = 0;
  for (const Outcome& o : outcomes) {
    failed += o.kind == Outcome::kFailed;
    exact += o.kind == Outcome::kExact;
    tolerant += o.kind == Outcome::kTolerant;
  }
  std::printf("%zu cases on the SIMT emulator (%d processes): %d bit-exact as required, %d within tolerance, %d failed\n",
              todo.size(), std::max(jobs, 1), exact, tolerant, failed);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace kern::sim

int main(int argc, char** argv) {
  kern::sim::Options opt;
  opt.jobs = kern::sim::usable_cpus();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--seed" && has_value) opt.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--block-order-seed" && has_value) opt.block_order_seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--filter" && has_value) opt.filter = argv[++i];
    else if (a == "--jobs" && has_value && std::atoi(argv[i + 1]) > 0) opt.jobs = std::atoi(argv[++i]);
    else if (a == "--pdl-manifest" && has_value) {
      if (!kern::sim::read_pdl_manifest(argv[++i], opt.pdl_symbols)) return 2;
    }
    else {
      std::fprintf(stderr, "usage: kern-sim-compare [--seed S] [--block-order-seed N] [--filter TEXT] [--jobs N] [--pdl-manifest FILE]...\n");
      return 2;
    }
  }
  return kern::sim::run(opt);
}
