// kern-sim-compare: every GPU comparison case (test/gpu/kernel_cases.h) run
// on the SIMT emulator (the real .cu kernels, sim_api.h) and on the cpu
// reference, compared. A case whose kernels the emulator computes in the cpu
// twin's order (sim_exact below, docs/kernels.md) must match bit for bit; the
// others within the harness tolerance. Any emulator violation (race, bounds,
// alignment, PDL, counters) fails the case.
//
//   kern-sim-compare [--seed S] [--block-order-seed N] [--filter TEXT] [--pdl-manifest FILE]...
//
// --pdl-manifest: every kernel a step of FILE marks "pdl": true is launched
// as a PDL launch, and every buffer of a case counts as written by an
// earlier launch, so each such kernel's pdl_wait() placement is checked
// (nothing read or written before it), and a pdl kernel that never calls
// pdl_wait() fails. Exit status: 0 all
// cases pass, 1 a mismatch or violation, 2 bad usage.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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
    "kern_embedding_bf16", "kern_decode_advance", "kern_decode_advance_batch", "kern_reshape_and_cache_bf16",
    "kern_argmax_partial_bf16",
    "kern_argmax_reduce", "kern_silu_and_mul_bf16", "kern_rope_bf16", "kern_gemv_bf16", "kern_gemv_acc_bf16",
    "kern_gemv_residual_bf16", "kern_gemv_silu_mul_bf16", "kern_gemv_rmsnorm_bf16",
    "kern_gemv_rmsnorm_silu_mul_bf16", "kern_gemv_rmsnorm_argmax_bf16", "kern_sample_bf16",
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
};

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

int run(const Options& opt) {
  std::vector<Case> cases = gpu_test::make_cases(opt.seed);
  int failed = 0, exact = 0, tolerant = 0, ran = 0;
  for (Case& c : cases) {
    if (!opt.filter.empty() && c.name.find(opt.filter) == std::string::npos) continue;
    ++ran;
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
    if (!ok) ++failed;
    else if (want_exact) ++exact;
    else ++tolerant;
    std::printf("%-8s %-6s %-60s max_err %.3g %s\n", ok ? "ok" : "FAIL",
                want_exact ? "exact" : (all_exact ? "equal" : "tol"), c.name.c_str(), max_err, detail.c_str());
  }
  std::printf("%d cases on the SIMT emulator: %d bit-exact as required, %d within tolerance, %d failed\n", ran,
              exact, tolerant, failed);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace kern::sim

int main(int argc, char** argv) {
  kern::sim::Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--seed" && has_value) opt.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--block-order-seed" && has_value) opt.block_order_seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--filter" && has_value) opt.filter = argv[++i];
    else if (a == "--pdl-manifest" && has_value) {
      if (!kern::sim::read_pdl_manifest(argv[++i], opt.pdl_symbols)) return 2;
    }
    else {
      std::fprintf(stderr, "usage: kern-sim-compare [--seed S] [--block-order-seed N] [--filter TEXT] [--pdl-manifest FILE]...\n");
      return 2;
    }
  }
  return kern::sim::run(opt);
}
