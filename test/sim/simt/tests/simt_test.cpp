// The SIMT emulator (test/sim/simt/sim_api.h): CUDA's semantics for warp
// collectives, barriers, block order and dynamic shared memory, and each
// check on the deliberately broken kernel that it must catch
// (broken_kernels.cu), next to the correct twin it must pass.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "test/sim/simt/sim_api.h"
#include "test/sim/simt/tests/broken_kernels.h"

namespace kern::sim {
namespace {

/// A device buffer of T, registered with the shadow; `written`: contents count as copied in.
template <typename T>
struct Buf {
  std::vector<T> v;
  Buf(size_t n, T init, bool written = true) : v(n, init) {
    on_alloc(v.data(), n * sizeof(T));
    if (written) on_write(v.data(), n * sizeof(T));
  }
  ~Buf() { on_free(v.data()); }
  T* p() { return v.data(); }
};

/// Launches test kernel `name` with a (grid x, block x) shape and the given
/// parameter values; returns the violation ("" when none).
template <typename... A>
std::string launch(const char* name, unsigned grid, unsigned block, LaunchParams lp, A... args) {
  const KernelEntry* k = kern_sim_broken_kernel(name);
  REQUIRE(k != nullptr);
  lp.grid.x = grid;
  lp.block.x = block;
  void* params[] = {static_cast<void*>(&args)...};
  REQUIRE(k->param_sizes.size() == sizeof...(A));
  return k->launch(lp, params);
}
template <typename... A>
std::string launch(const char* name, unsigned grid, unsigned block, A... args) {
  return launch(name, grid, block, LaunchParams{}, args...);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// "0x7f..." as the emulator prints addresses.
std::string hexaddr(const void* p) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%lx", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
  return b;
}

TEST_CASE("every real kernel entry is emulated, with the parameter layout of its signature") {
  const auto& all = all_kernels();
  // 23 + the batched decode's attention and advance + kern_sample_bf16 + the two decode attentions
  // that fold in q/k norm + RoPE + the KV write (kern_attention_decode_qkv_bf16, kern_attention_decode_batch_qkv_bf16)
  // + kern_bias_add_bf16 (Qwen2's qkv bias) + the three kernels of the mining test's foreign program (test/mining/foreign/)
  // + the three mixture-of-experts kernels (kern_moe_router_bf16, kern_moe_gate_up_bf16, kern_moe_down_bf16)
  // + kern_last_row (prefill_last's last-row gather).
  CHECK(all.size() == 36);
  // foreign_scale: one struct by value (two pointers, a float, an int: 24 bytes).
  const KernelEntry* f = find_kernel("foreign_scale");
  REQUIRE(f != nullptr);
  CHECK(f->family == "mining_foreign");
  REQUIRE(f->param_sizes.size() == 1);
  CHECK(f->param_sizes[0] == 24);
  // kern_sample_bf16: 9 pointers, then rows, vocab, max_rows (i32).
  const KernelEntry* s = find_kernel("kern_sample_bf16");
  REQUIRE(s != nullptr);
  CHECK(s->family == "sample");
  REQUIRE(s->param_sizes.size() == 12);
  CHECK(s->param_offsets[8] == 64);
  CHECK(s->param_offsets[11] == 80);
  const KernelEntry* g = find_kernel("kern_gemv_rmsnorm_argmax_bf16");
  REQUIRE(g != nullptr);
  CHECK(g->family == "gemv");
  // a, norm_weight, w, c, partial, counters, argmax_val, argmax_idx, next_token (9 pointers), m, n, k, lda, ldc,
  // splits, eps.
  REQUIRE(g->param_sizes.size() == 16);
  CHECK(g->param_offsets[8] == 64);
  CHECK(g->param_offsets[9] == 72);
  CHECK(g->param_offsets[15] == 96);
  CHECK(find_kernel("kern_no_such_kernel") == nullptr);
}

TEST_CASE("warp shuffles and votes follow CUDA's lane rules") {
  Buf<int> out(4 * 64, -1);
  Buf<unsigned> ballot(2, 0);
  REQUIRE(launch("sim_collectives", 1, 64, out.p(), ballot.p()) == "");
  for (int t = 0; t < 64; ++t) {
    const int lane = t & 31, base = t & ~31;
    INFO("thread " << t);
    CHECK(out.v[4 * t + 0] == base + (lane ^ 5));
    CHECK(out.v[4 * t + 1] == (lane + 3 < 32 ? t + 3 : t));              // down: own value past the end
    CHECK(out.v[4 * t + 2] == ((lane & 15) >= 2 ? t - 2 : t));           // up within 16-lane groups
    CHECK(out.v[4 * t + 3] == base + (lane & ~7) + 7);                   // idx 7 within 8-lane groups
  }
  CHECK(ballot.v[0] == 0xaaaaaaaau);
  CHECK(ballot.v[1] == 0xaaaaaaaau);
}

TEST_CASE("shared-memory races between barriers are caught; the barrier fixes them") {
  Buf<float> out(64, 0);
  const std::string race = launch("sim_shared_race", 1, 64, out.p(), 0);
  CHECK(contains(race, "sim_shared_race block (0,0,0) thread (1,0,0): shared-memory race"));
  CHECK(launch("sim_shared_race", 1, 64, out.p(), 1) == "");
  CHECK(out.v[5] == 4.0f);
  CHECK(contains(launch("sim_shared_war", 1, 64, out.p(), 0), "shared-memory race: write"));
  CHECK(launch("sim_shared_war", 1, 64, out.p(), 1) == "");
}

TEST_CASE("reads of shared memory no thread of the block wrote are caught; shared memory is poisoned per block") {
  Buf<float> out(64, 0);
  const std::string e = launch("sim_shared_uninit", 1, 64, out.p(), 16);
  CHECK(contains(e, "thread (16,0,0): read of shared memory"));
  CHECK(contains(e, "that no thread of this block has written"));
  CHECK(launch("sim_shared_uninit", 2, 64, out.p(), 64) == "");
  // Unchecked, the unwritten slots read the poison (all ones: NaN), not a previous block's values.
  CheckOptions o;
  o.shared_uninit = false;
  set_check_options(o);
  REQUIRE(launch("sim_shared_uninit", 2, 64, out.p(), 16) == "");
  set_check_options(CheckOptions{});
  CHECK(out.v[15] == 1.0f);
  uint32_t bits;
  std::memcpy(&bits, &out.v[16], 4);
  CHECK(bits == 0xffffffffu);
}

TEST_CASE("out-of-bounds global accesses and reads of never-written device memory are caught") {
  Buf<float> in(64, 1.0f), out(64, 0);
  CHECK(launch("sim_copy_shift", 2, 32, in.p(), out.p(), 0) == "");
  const std::string oob = launch("sim_copy_shift", 2, 32, in.p(), out.p(), 1);
  CHECK(contains(oob, "block (1,0,0) thread (31,0,0): out-of-bounds 4-byte read"));
  CHECK(contains(oob, "0 bytes past the end of allocation"));
  Buf<float> fresh(64, 0.0f, /*written=*/false);
  const std::string un = launch("sim_copy_shift", 2, 32, fresh.p(), out.p(), 0);
  CHECK(contains(un, "thread (0,0,0): read of 4 bytes"));
  CHECK(contains(un, "reads memory no copy, memset or launch has written"));
  // A launch's writes count as written for the next launch.
  CHECK(launch("sim_copy_shift", 2, 32, in.p(), fresh.p(), 0) == "");
  CHECK(launch("sim_copy_shift", 2, 32, fresh.p(), out.p(), 0) == "");
}

/// This process's resident memory in bytes (/proc/self/statm's second field, in pages).
size_t resident_bytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(resident) * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

TEST_CASE("an allocation written whole keeps one writer id, not 4 bytes per byte; writes to a part of it split it") {
  // 64 MB of device memory that nothing touches: with a writer id per byte,
  // the host copy below would make 256 MB of shadow resident.
  const size_t bytes = size_t{64} << 20;
  void* dev = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(dev != MAP_FAILED);
  const size_t before = resident_bytes();
  on_alloc(dev, bytes);
  on_write(dev, bytes);
  const size_t grown = resident_bytes() - std::min(before, resident_bytes());
  CHECK(grown < (size_t{16} << 20));
  on_free(dev);
  ::munmap(dev, bytes);

  // Written whole by the host, then half by a launch: a PDL read of the
  // launch's half is the violation, of the host's half it is not.
  Buf<float> in(64, 1.0f), out(32, 0);
  on_launch_write(in.p() + 32, 32 * sizeof(float));
  LaunchParams pdl;
  pdl.pdl = true;
  CHECK(launch("sim_pdl_consumer", 1, 32, pdl, static_cast<const float*>(in.p()), out.p(), 0) == "");
  CHECK(contains(launch("sim_pdl_consumer", 1, 32, pdl, static_cast<const float*>(in.p() + 32), out.p(), 0),
                 "(an earlier launch the emulator did not run) wrote"));
  // Never written, then its first half copied in: the second half is still unwritten.
  Buf<float> fresh(64, 0.0f, /*written=*/false);
  on_write(fresh.p(), 32 * sizeof(float));
  CHECK(launch("sim_pdl_consumer", 1, 32, static_cast<const float*>(fresh.p()), out.p(), 0) == "");
  CHECK(contains(launch("sim_pdl_consumer", 1, 32, static_cast<const float*>(fresh.p() + 32), out.p(), 0),
                 "reads memory no copy, memset or launch has written"));
  // Written whole again: one id for all of it.
  on_write(fresh.p(), 64 * sizeof(float));
  CHECK(launch("sim_pdl_consumer", 1, 32, static_cast<const float*>(fresh.p() + 32), out.p(), 0) == "");
}

TEST_CASE("a read or write that starts inside an allocation and runs past its end is caught, at every access width") {
  // The bounds check once tested only where an access starts (issue 47): a
  // multi-byte access whose first bytes are the allocation's last ones
  // passed. Each hook the kernels' emulated code calls (sim_access_width),
  // at each width, over an allocation of 1.5 widths: the access at offset
  // `width` (its natural alignment) has its first half inside and the rest
  // past the end. The backing array is larger, so no host byte is overrun
  // even if the check let the access through. (A 1-byte access cannot
  // straddle; the 1-byte reads some kernels make are covered by the test
  // above: an access that starts at the end.)
  alignas(16) static unsigned char raw[64];
  Buf<float> out(8, 0);
  struct Access {
    int mode;
    const char* verb;
    std::vector<int> widths;
  };
  const Access accesses[] = {{0, "read", {2, 4, 8, 16}},   {1, "write", {2, 4, 8, 16}},
                             {2, "atomic", {4}},           {3, "read", {4, 8}},  // unaligned
                             {4, "read", {2, 4, 8, 16}},   {5, "write", {2, 4, 8, 16}}};  // memcpy
  for (const Access& x : accesses) {
    for (int width : x.widths) {
      INFO("mode " << x.mode << ": " << width << "-byte " << x.verb);
      const size_t size = width + width / 2;
      std::memset(raw, 0, sizeof raw);
      on_alloc(raw, size);
      on_write(raw, size);
      // The same access wholly inside is clean: only the overrun is caught.
      CHECK(launch("sim_access_width", 1, 1, raw, out.p(), 0, width, x.mode) == "");
      const std::string e = launch("sim_access_width", 1, 1, raw, out.p(), width, width, x.mode);
      INFO(e);
      CHECK(contains(e, "thread (0,0,0): out-of-bounds " + std::to_string(width) + "-byte " + x.verb + " at " +
                            hexaddr(raw + width) + " (allocation " + hexaddr(raw) + " (byte " +
                            std::to_string(width) + " of " + std::to_string(size) + ")) runs " +
                            std::to_string(width / 2) + " bytes past its end"));
      on_free(raw);
    }
  }
}

TEST_CASE("a 16-byte vector access at an address that is not 16-aligned is caught") {
  alignas(16) static uint16_t raw[64];
  on_alloc(raw, sizeof raw);
  on_write(raw, sizeof raw);
  Buf<float> out(8, 0);
  const auto* in = reinterpret_cast<const void*>(raw);
  CHECK(launch("sim_vector_load", 1, 1, in, out.p(), 8) == "");
  // 8-byte aligned is not enough for a 16-byte vector (x86 does not care; a GPU faults).
  const std::string e = launch("sim_vector_load", 1, 1, in, out.p(), 4);
  INFO(e);
  CHECK(contains(e, "thread (0,0,0): misaligned vector access at"));
  CHECK(contains(e, "which needs 16-byte alignment"));
  CHECK(contains(launch("sim_vector_load", 1, 1, in, out.p(), 1), "misaligned"));
  on_free(raw);
}

TEST_CASE("PDL: before pdl_wait() nothing an earlier launch wrote is read, nor anything it read or wrote written") {
  Buf<float> a(32, 1.0f), b(32, 0), c(32, 0);
  LaunchParams pdl;
  pdl.pdl = true;
  // a was copied in (no launch wrote it): reading it before the wait is fine.
  CHECK(launch("sim_pdl_consumer", 1, 32, pdl, static_cast<const float*>(a.p()), b.p(), 0) == "");
  // b was written by that launch: reading it before the wait is the violation, after is fine.
  const std::string e = launch("sim_pdl_consumer", 1, 32, pdl, static_cast<const float*>(b.p()), c.p(), 0);
  CHECK(contains(e, "thread (0,0,0): PDL: before pdl_wait() reads"));
  CHECK(contains(e, "(sim_pdl_consumer) wrote"));
  CHECK(launch("sim_pdl_consumer", 1, 32, pdl, static_cast<const float*>(b.p()), c.p(), 1) == "");
  // Not a PDL launch: the order is the stream's, nothing to check.
  CHECK(launch("sim_pdl_consumer", 1, 32, static_cast<const float*>(c.p()), b.p(), 0) == "");
  // b was read by the last launch: writing it before the wait is the violation.
  CHECK(contains(launch("sim_pdl_writer", 1, 32, pdl, c.p(), 0), "before pdl_wait() writes"));
  CHECK(launch("sim_pdl_writer", 1, 32, pdl, c.p(), 1) == "");
}

TEST_CASE("a PDL launch of a kernel that never calls pdl_wait() is flagged") {
  Buf<float> out(32, 0), fresh(32, 0);
  LaunchParams pdl;
  pdl.pdl = true;
  CHECK(launch("sim_no_pdl_wait", 1, 32, out.p()) == "");
  // (Its write of `out` before any wait would be a PDL violation by itself; `fresh` no launch has touched.)
  CHECK(contains(launch("sim_no_pdl_wait", 1, 32, pdl, out.p()), "PDL: before pdl_wait() writes"));
  CHECK(contains(launch("sim_no_pdl_wait", 1, 32, pdl, fresh.p()), "no thread called pdl_wait()"));
}

TEST_CASE("inter-block counters must be back at zero after every launch") {
  Buf<float> partial(8, 0), out(1, 0);
  Buf<int> counter(1, 0);
  LaunchParams shuffled;
  shuffled.block_order_seed = 3;
  CHECK(launch("sim_last_block", 8, 32, shuffled, partial.p(), counter.p(), out.p(), 1) == "");
  CHECK(out.v[0] == 28.0f);
  CHECK(launch("sim_last_block", 8, 32, partial.p(), counter.p(), out.p(), 1) == "");  // a replay
  const std::string e = launch("sim_last_block", 8, 32, partial.p(), counter.p(), out.p(), 0);
  CHECK(contains(e, "the inter-block counter at"));
  CHECK(contains(e, "is 8 after the launch"));
}

TEST_CASE("a barrier or full-mask shuffle that an exited thread should join is an error naming it; deadlocks are reported") {
  Buf<float> out(64, 0);
  CHECK(contains(launch("sim_barrier_exit", 1, 64, out.p(), 5),
                 "sim_barrier_exit block (0,0,0) thread (5,0,0): exited while threads"));
  CHECK(launch("sim_barrier_exit", 1, 64, out.p(), 99) == "");
  CHECK(contains(launch("sim_shuffle_exit", 1, 32, out.p(), 3),
                 "thread (3,0,0): exited while lanes of its warp wait for it at __shfl_xor_sync"));
  CHECK(launch("sim_shuffle_exit", 1, 32, out.p(), 99) == "");
  CHECK(out.v[0] == 32.0f);
  CHECK(contains(launch("sim_shuffle_exit", 1, 48, out.p(), 99), "names lane 16, which this block of 48 threads"));
  CHECK(contains(launch("sim_deadlock", 1, 32, out.p()), "deadlock"));
}

TEST_CASE("blocks run in an order shuffled by the seed, and in order without one") {
  Buf<int> order(24, -1), ticket(1, 0);
  LaunchParams lp;
  lp.grid.y = 3;
  REQUIRE(launch("sim_block_order", 8, 1, lp, order.p(), ticket.p()) == "");
  std::vector<int> in_order(24);
  std::iota(in_order.begin(), in_order.end(), 0);
  CHECK(order.v == in_order);
  lp.block_order_seed = 42;
  REQUIRE(launch("sim_block_order", 8, 1, lp, order.p(), ticket.p()) == "");
  CHECK(order.v != in_order);
  std::vector<int> sorted = order.v;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == in_order);
}

TEST_CASE("dynamic shared memory is the launch's size, bounds-checked") {
  Buf<float> out(32, 0);
  LaunchParams lp;
  lp.dynamic_shared_bytes = 64;
  CHECK(launch("sim_dynamic_shared", 1, 32, lp, out.p(), 0) == "");
  CHECK(out.v[31] == 5.0f);
  CHECK(contains(launch("sim_dynamic_shared", 1, 32, lp, out.p(), 16), "out-of-bounds read of dynamic shared memory"));
  CHECK(contains(launch("sim_dynamic_shared", 1, 32, lp, out.p(), 3), "that no thread of this block has written"));
}

TEST_CASE("launch geometry beyond CUDA's limits is refused") {
  Buf<float> out(32, 0);
  CHECK(contains(launch("sim_no_pdl_wait", 1, 2048, out.p()), "beyond CUDA's limits"));
  CHECK(contains(launch("sim_no_pdl_wait", 0, 32, out.p()), "empty grid"));
}


// docs/kernels.md §11: a norm gemv needs m k 2 bytes of dynamic shared memory
// for its normalised rows; the plan sizes it for the rows its program launches
// (decode: 1), and a launch with more rows traps instead of overrunning it.
TEST_CASE("a norm-prologue gemv given shared memory for fewer rows than m traps instead of overrunning it") {
  const KernelEntry* k = find_kernel("kern_gemv_rmsnorm_bf16");
  REQUIRE(k != nullptr);
  constexpr int kK = 64, kN = 8;
  alignas(16) static uint16_t a[2 * kK], nw[kK], w[kN * kK], c[2 * kN];
  static float partial[4];
  static int counters[1];
  std::fill(std::begin(a), std::end(a), uint16_t(0x3f80));  // bf16 1.0
  std::fill(std::begin(nw), std::end(nw), uint16_t(0x3f80));
  std::fill(std::begin(w), std::end(w), uint16_t(0x3c00));   // bf16 2^-7
  on_alloc(a, sizeof a), on_write(a, sizeof a);
  on_alloc(nw, sizeof nw), on_write(nw, sizeof nw);
  on_alloc(w, sizeof w), on_write(w, sizeof w);
  on_alloc(c, sizeof c);
  on_alloc(partial, sizeof partial);
  on_alloc(counters, sizeof counters), on_write(counters, sizeof counters);
  auto run = [&](int m, unsigned smem) {
    const uint16_t* pa = a;
    const uint16_t* pnw = nw;
    const uint16_t* pw = w;
    uint16_t* pc = c;
    float* pp = partial;
    int* pcnt = counters;
    int mm = m, n = kN, kk = kK, lda = kK, ldc = kN, splits = 1;
    float eps = 1e-6f;
    void* params[] = {&pa, &pnw, &pw, &pc, &pp, &pcnt, &mm, &n, &kk, &lda, &ldc, &splits, &eps};
    LaunchParams lp;
    lp.grid.x = 1;
    lp.block.x = 128;
    lp.dynamic_shared_bytes = smem;
    return k->launch(lp, params);
  };
  CHECK(run(1, 2 * kK) == "");      // decode's one row in one row's bytes
  CHECK(run(2, 2 * 2 * kK) == "");  // two rows in two rows' bytes
  CHECK(c[kN] == 0x3f00);           // row 1, column 0: 64 x 1.0 x 2^-7 = 0.5
  CHECK(contains(run(2, 2 * kK), "__trap()"));  // two rows in one row's bytes
  for (void* p : {static_cast<void*>(a), static_cast<void*>(nw), static_cast<void*>(w), static_cast<void*>(c),
                  static_cast<void*>(partial), static_cast<void*>(counters)})
    on_free(p);
}

}  // namespace
}  // namespace kern::sim
