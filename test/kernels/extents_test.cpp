// The cpu reference kernels' extent declarations (cpu_kernel.h CpuExtentFn):
// the bytes each pointer param may touch, from the scalar params, checked
// against hand-computed values from docs/kernels.md; saturation instead of
// wrap-around; and the data-chosen accesses (KV slots, pages, rope rows)
// each kernel checks itself against CpuLaunch::avail.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels-src/cpu/cpu_kernel.h"
#include "test/kernels/kernel_test_util.h"

using namespace kern;
using namespace kern::cpu;
using kern::cpu::test::ArgPack;

namespace {

/// The declared extents of `symbol` for `args` (REQUIREs success).
CpuExtents extents_of(std::string_view symbol, const ArgPack& args) {
  const CpuKernel* k = find_cpu_kernel(symbol);
  REQUIRE(k != nullptr);
  CpuLaunch l;
  l.args = args.data();
  l.num_args = args.size();
  CpuExtents e;
  const Status s = k->extents(l, e);
  REQUIRE(s.ok());
  return e;
}

/// Runs `symbol` with `args`, grid `gx`, and the given bytes available after each pointer.
Status run_with_avail(std::string_view symbol, const ArgPack& args, uint32_t gx, const std::vector<uint64_t>& avail) {
  const CpuKernel* k = find_cpu_kernel(symbol);
  REQUIRE(k != nullptr);
  CpuLaunch l;
  l.grid[0] = gx;
  l.args = args.data();
  l.num_args = args.size();
  l.avail = avail.data();
  return k->run(l);
}

void* p(std::vector<uint16_t>& v) { return v.data(); }

}  // namespace

TEST_CASE("embedding declares ids, the whole table and the output rows", "[kernels][extents]") {
  ArgPack a;
  a.add<void*>(nullptr).add<void*>(nullptr).add<void*>(nullptr).add<int32_t>(3).add<int32_t>(4).add<int32_t>(10);
  const CpuExtents e = extents_of("kern_embedding_bf16", a);
  CHECK(e.bytes[0] == 3 * 8);
  CHECK(e.bytes[1] == 10 * 4 * 2);
  CHECK(e.bytes[2] == 3 * 4 * 2);
  CHECK(std::string(e.names[1]) == "table");
  for (size_t i = 3; i < kMaxCpuParams; ++i) CHECK(e.bytes[i] == 0);  // scalars touch nothing
  a.set<int32_t>(4, 1000000);  // the lying `hidden`
  CHECK(extents_of("kern_embedding_bf16", a).bytes[2] == 3ull * 1000000 * 2);
  a.set<int32_t>(3, 0);  // no tokens: nothing is touched
  const CpuExtents none = extents_of("kern_embedding_bf16", a);
  CHECK((none.bytes[0] | none.bytes[1] | none.bytes[2]) == 0);
}

TEST_CASE("strided kernels declare (rows - 1) * stride + row elements", "[kernels][extents]") {
  // head_rmsnorm: 6 heads, 2 per token -> 3 tokens; D = 4; x_stride 20, y_stride 8.
  ArgPack h;
  h.add<void*>(nullptr).add<void*>(nullptr).add<void*>(nullptr);
  h.add<int32_t>(6).add<int32_t>(2).add<int32_t>(4).add<int32_t>(20).add<int32_t>(8).add<float>(1e-6f);
  const CpuExtents e = extents_of("kern_head_rmsnorm_bf16", h);
  CHECK(e.bytes[0] == (2 * 20 + 8) * 2);
  CHECK(e.bytes[1] == 4 * 2);
  CHECK(e.bytes[2] == (2 * 8 + 8) * 2);
  // rope: 3 tokens, 2 q heads, 1 k head, D 8, q_stride 32, k_stride 16.
  ArgPack r;
  r.add<void*>(nullptr).add<void*>(nullptr).add<void*>(nullptr).add<void*>(nullptr);
  r.add<int32_t>(3).add<int32_t>(2).add<int32_t>(1).add<int32_t>(8).add<int32_t>(32).add<int32_t>(16).add<uint8_t>(1);
  const CpuExtents re = extents_of("kern_rope_bf16", r);
  CHECK(re.bytes[0] == 3 * 8);
  CHECK(re.bytes[1] == (2 * 32 + 16) * 2);
  CHECK(re.bytes[2] == (2 * 16 + 8) * 2);
  CHECK(re.bytes[3] == 8 * 4);  // row 0; the rows the positions pick are the kernel's check
}

TEST_CASE("gemm, argmax and attention declare their documented sizes", "[kernels][extents]") {
  ArgPack g;
  g.add<void*>(nullptr).add<void*>(nullptr).add<void*>(nullptr).add<int32_t>(2).add<int32_t>(3).add<int32_t>(5);
  for (const char* sym : {"extern:cublaslt_bf16_tn", "extern:cublaslt_bf16_tn_acc"}) {
    const CpuExtents e = extents_of(sym, g);
    CHECK(e.bytes[0] == 2 * 5 * 2);
    CHECK(e.bytes[1] == 3 * 5 * 2);
    CHECK(e.bytes[2] == 2 * 3 * 2);
  }
  ArgPack am;
  am.add<void*>(nullptr).add<void*>(nullptr).add<void*>(nullptr).add<int32_t>(2).add<int32_t>(100).add<int32_t>(64);
  const CpuExtents ae = extents_of("kern_argmax_partial_bf16", am);
  CHECK(ae.bytes[0] == 2 * 100 * 2);
  CHECK(ae.bytes[1] == 2 * 64 * 4);
  CHECK(ae.bytes[2] == 2 * 64 * 4);
  // decode partial: T 1, H 4, KV 2, D 8, page_stride 512, splits 16.
  ArgPack pa;
  for (int i = 0; i < 9; ++i) pa.add<void*>(nullptr);
  pa.add<int32_t>(1).add<int32_t>(4).add<int32_t>(2).add<int32_t>(8).add<int64_t>(512).add<float>(0.35f).add<int32_t>(16);
  const CpuExtents pe = extents_of("kern_paged_attention_partial_bf16", pa);
  CHECK(pe.bytes[0] == 1 * 4 * 8 * 2);
  CHECK(pe.bytes[1] == 0);  // kv_cache: pages come from the block table (kernel-checked)
  CHECK(pe.bytes[2] == 4);  // at least ceil(T / 16) block table entries
  CHECK(pe.bytes[7] == 1 * 4 * 16 * 8 * 4);
  CHECK(pe.bytes[8] == 1 * 4 * 16 * 2 * 4);
  // One-step attention, causal (prefill) and non-causal (the speculative
  // draft): T 20, H 4, KV 2, D 8: q and out rows, two block-table entries.
  ArgPack one;
  for (int i = 0; i < 8; ++i) one.add<void*>(nullptr);
  one.add<int32_t>(20).add<int32_t>(4).add<int32_t>(2).add<int32_t>(8).add<int64_t>(512).add<float>(0.35f);
  for (const char* sym : {"kern_paged_attention_prefill_bf16", "kern_paged_attention_noncausal_bf16"}) {
    INFO(sym);
    const CpuExtents oe = extents_of(sym, one);
    CHECK(oe.bytes[0] == 20 * 4 * 8 * 2);
    CHECK(oe.bytes[1] == 0);
    CHECK(oe.bytes[2] == 2 * 4);
    CHECK(oe.bytes[7] == 20 * 4 * 8 * 2);
  }
}

TEST_CASE("an extent too large for u64 saturates instead of wrapping", "[kernels][extents]") {
  ArgPack pa;
  for (int i = 0; i < 9; ++i) pa.add<void*>(nullptr);
  const int32_t big = std::numeric_limits<int32_t>::max();
  pa.add<int32_t>(big).add<int32_t>(big).add<int32_t>(1).add<int32_t>(big).add<int64_t>(0).add<float>(1.0f).add<int32_t>(big);
  CHECK(extents_of("kern_paged_attention_partial_bf16", pa).bytes[7] == std::numeric_limits<uint64_t>::max());
  // A negative size declares nothing (the kernel rejects it before touching memory).
  ArgPack n;
  n.add<void*>(nullptr).add<void*>(nullptr).add<void*>(nullptr).add<int32_t>(-1).add<int32_t>(4).add<float>(1e-6f);
  CHECK(extents_of("kern_rmsnorm_bf16", n).bytes[0] == 0);
}

TEST_CASE("a KV slot beyond the cache the device gave is an error before anything is written",
          "[kernels][extents]") {
  // 1 token, KV 1, D 2: a page of one layer is 16 * 1 * 2 * 2 = 64 elements.
  std::vector<uint16_t> k(2, 0x3f80), v(2, 0x3f80), cache(64, 0);
  std::vector<int64_t> slots{17};  // page 1: needs 2 pages
  float scale = 1.0f;
  ArgPack a;
  a.add<void*>(p(k)).add<void*>(p(v)).add<void*>(p(cache)).add<void*>(slots.data()).add<void*>(&scale).add<void*>(&scale);
  a.add<int32_t>(1).add<int32_t>(1).add<int32_t>(2).add<int32_t>(2).add<int32_t>(2).add<int64_t>(64);
  const std::vector<uint64_t> avail{4, 4, 128, 8, 4, 4, 0, 0, 0, 0, 0, 0};
  const Status s = run_with_avail("kern_reshape_and_cache_bf16", a, 1, avail);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message ==
        "kern_reshape_and_cache_bf16: param 2 (kv_cache): slot_mapping[0] = 17 needs 144 B from the pointer; its "
        "buffer holds 128 B from there");
  CHECK(cache == std::vector<uint16_t>(64, 0));
  slots[0] = 15;  // the last slot of page 0 fits
  CHECK(run_with_avail("kern_reshape_and_cache_bf16", a, 1, avail).ok());
}

TEST_CASE("a rope position past the cos/sin cache the device gave is an error", "[kernels][extents]") {
  std::vector<int64_t> pos{3};
  std::vector<uint16_t> q(4, 0x3f80);
  std::vector<float> cache(3 * 4, 0.5f);  // max_pos 3, D 4
  ArgPack a;
  a.add<void*>(pos.data()).add<void*>(p(q)).add<void*>(nullptr).add<void*>(cache.data());
  a.add<int32_t>(1).add<int32_t>(1).add<int32_t>(0).add<int32_t>(4).add<int32_t>(4).add<int32_t>(0).add<uint8_t>(1);
  const std::vector<uint64_t> avail{8, 8, 0, 48, 0, 0, 0, 0, 0, 0, 0};
  const Status s = run_with_avail("kern_rope_bf16", a, 1, avail);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("param 3 (cos_sin_cache): positions[0] = 3 needs 64 B") != std::string::npos);
  pos[0] = 2;
  CHECK(run_with_avail("kern_rope_bf16", a, 1, avail).ok());
}

TEST_CASE("the decode gemvs declare strided a and c rows, the whole weight, and split and argmax scratch",
          "[kernels][extents]") {
  // kern_gemv_rmsnorm_silu_mul_bf16: a, norm_weight, w [2n, k], c, partial, counters, m n k lda ldc splits, eps.
  ArgPack a;
  for (int i = 0; i < 6; ++i) a.add<void*>(nullptr);
  a.add<int32_t>(3).add<int32_t>(10).add<int32_t>(16).add<int32_t>(20).add<int32_t>(12).add<int32_t>(2).add(1e-6f);
  CpuExtents e = extents_of("kern_gemv_rmsnorm_silu_mul_bf16", a);
  CHECK(e.bytes[0] == (2 * 20 + 16) * 2);   // a: (m - 1) lda + k elements
  CHECK(e.bytes[1] == 16 * 2);              // norm_weight
  CHECK(e.bytes[2] == 2 * 10 * 16 * 2);     // w: [gate; up]
  CHECK(e.bytes[3] == (2 * 12 + 10) * 2);   // c: (m - 1) ldc + n
  CHECK(e.bytes[4] == 2 * 3 * 20 * 4);      // partial [splits, m, 2n] f32
  CHECK(e.bytes[5] == 2 * 4);               // counters: one per 8-column tile
  CHECK(std::string(e.names[2]) == "w");
  a.set<int32_t>(11, 1);  // one split: no partials, no counters
  e = extents_of("kern_gemv_rmsnorm_silu_mul_bf16", a);
  CHECK(e.bytes[4] == 0);
  CHECK(e.bytes[5] == 0);
  // kern_gemv_rmsnorm_argmax_bf16: a, norm_weight, w, c, partial, counters, argmax_val, argmax_idx, next_token,
  // six i32, eps. One split: the counters are still touched (the argmax's done counter after the 2 tiles).
  ArgPack g;
  for (int i = 0; i < 9; ++i) g.add<void*>(nullptr);
  g.add<int32_t>(3).add<int32_t>(10).add<int32_t>(16).add<int32_t>(16).add<int32_t>(12).add<int32_t>(1).add(1e-6f);
  e = extents_of("kern_gemv_rmsnorm_argmax_bf16", g);
  CHECK(e.bytes[4] == 0);       // no partials
  CHECK(e.bytes[5] == 3 * 4);   // counters: 2 tiles + the argmax's
  CHECK(e.bytes[8] == 3 * 8);   // next_token [m]
  CHECK(std::string(e.names[8]) == "next_token");
  // kern_gemv_residual_bf16: a, w, residual, c, partial, counters, six i32.
  ArgPack r;
  for (int i = 0; i < 6; ++i) r.add<void*>(nullptr);
  r.add<int32_t>(2).add<int32_t>(9).add<int32_t>(8).add<int32_t>(8).add<int32_t>(9).add<int32_t>(1);
  e = extents_of("kern_gemv_residual_bf16", r);
  CHECK(e.bytes[1] == 9 * 8 * 2);
  CHECK(e.bytes[2] == (9 + 9) * 2);
  CHECK(e.bytes[3] == (9 + 9) * 2);
}

TEST_CASE("qk_norm_rope_cache checks its rope rows and KV slots against the buffers before writing",
          "[kernels][extents]") {
  // 1 token, H 1, KV 1, D 2: qkv row of 3 heads; a page of one layer is 16 * 1 * 2 * 2 = 64 elements.
  std::vector<uint16_t> qkv(6, 0x3f80), w(2, 0x3f80), q_out(2, 0), cache(64, 0);
  std::vector<int64_t> pos{1}, slots{17};
  std::vector<float> cs(2 * 2, 0.5f);  // max_pos 2
  float scale = 1.0f;
  ArgPack a;
  a.add<void*>(p(qkv)).add<void*>(p(w)).add<void*>(p(w)).add<void*>(pos.data()).add<void*>(cs.data());
  a.add<void*>(p(q_out)).add<void*>(p(cache)).add<void*>(slots.data()).add<void*>(&scale).add<void*>(&scale);
  a.add<int32_t>(1).add<int32_t>(1).add<int32_t>(1).add<int32_t>(2).add<int32_t>(6).add<int64_t>(64).add(1e-6f);
  a.add<uint8_t>(1);
  const CpuExtents e = extents_of("kern_qk_norm_rope_cache_bf16", a);
  CHECK(e.bytes[0] == 6 * 2);
  CHECK(e.bytes[5] == 2 * 2);
  CHECK(e.bytes[6] == 0);  // kv_cache: chosen by slot_mapping, checked by the kernel
  std::vector<uint64_t> avail(18, 0);
  avail[0] = 12, avail[1] = avail[2] = 4, avail[3] = 8, avail[4] = 16, avail[5] = 4, avail[6] = 128;
  avail[7] = 8, avail[8] = avail[9] = 4;
  CpuLaunch l;
  const CpuKernel* k = find_cpu_kernel("kern_qk_norm_rope_cache_bf16");
  l.args = a.data();
  l.num_args = a.size();
  l.avail = avail.data();
  l.block[0] = 128;
  Status s = k->run(l);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("param 6 (kv_cache): slot_mapping[0] = 17 needs 144 B") != std::string::npos);
  CHECK(q_out == std::vector<uint16_t>(2, 0));  // nothing written
  slots[0] = 15;
  pos[0] = 2;  // past max_pos 2
  s = k->run(l);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("param 4 (cos_sin_cache): positions[0] = 2 needs 24 B") != std::string::npos);
  pos[0] = 1;
  CHECK(k->run(l).ok());
}

TEST_CASE("one-launch decode attention declares q, partials, counters and out", "[kernels][extents]") {
  ArgPack a;
  for (int i = 0; i < 11; ++i) a.add<void*>(nullptr);
  a.add<int32_t>(2).add<int32_t>(8).add<int32_t>(2).add<int32_t>(16).add<int64_t>(1024).add(0.25f).add<int32_t>(4);
  const CpuExtents e = extents_of("kern_attention_decode_bf16", a);
  CHECK(e.bytes[0] == 2 * 8 * 16 * 2);
  CHECK(e.bytes[7] == 2 * 8 * 4 * 16 * 4);
  CHECK(e.bytes[8] == 2 * 8 * 4 * 2 * 4);
  CHECK(e.bytes[9] == 2 * 2 * 4);
  CHECK(e.bytes[10] == 2 * 8 * 16 * 2);
}
