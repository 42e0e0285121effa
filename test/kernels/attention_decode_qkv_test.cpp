// kern_attention_decode_qkv_bf16 (docs/kernels.md §13a) and
// kern_attention_decode_batch_qkv_bf16 (§15a): the decode attention that
// takes the raw qkv projection, folding in q/k RMSNorm + RoPE + the KV-cache
// write. Checked bit for bit against the two launches it replaces, on the cpu
// twins: kern_qk_norm_rope_cache_bf16 (each row at position seq_lens[r] - 1,
// its slot from its block-table row) followed by kern_attention_decode_bf16
// (one sequence) or kern_attention_decode_batch_bf16 (B sequences) — the
// attention output and every byte of the KV cache. Those two kernels are
// checked against the double-precision formulas in qk_norm_rope_cache_test.cpp,
// paged_attention_test.cpp and attention_decode_batch_test.cpp, so equal bits
// carry their bounds over. Free rows (seq_lens <= 0) write no cache byte.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

constexpr int kLayers = 2, kLayer = 1;

/// B decode rows over one paged cache: row r has ctx[r] positions, the last
/// of which (ctx[r] - 1) is this step's token, whose k / v the launch writes.
struct Step {
  int heads = 0, kv_heads = 0, dim = 0, splits = 0, stride = 0, pages_per_seq = 1;
  std::vector<int32_t> ctx, tables;
  std::vector<uint16_t> qkv, qw, kw, cache;
  std::vector<float> cos_sin, k_scale{0.75f}, v_scale{1.25f};
  int64_t page_stride = 0, layer_base = 0;
  uint8_t neox = 1;  ///< the u8 rope_flags: bit 0 neox, bit 1 no q/k norm (the norm weights then passed as null)
  int rows() const { return static_cast<int>(ctx.size()); }
  float scale() const { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim))); }
};

Step make_step(std::vector<int32_t> ctx, int heads, int kv_heads, int dim, int splits, std::mt19937& rng) {
  Step s;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.dim = dim;
  s.splits = splits;
  s.stride = (heads + 2 * kv_heads) * dim + 6;
  s.ctx = std::move(ctx);
  int total = 0, max_pos = 1;
  for (int32_t n : s.ctx) {
    s.pages_per_seq = std::max(s.pages_per_seq, (n + 15) / 16 + 1);
    total += (n + 15) / 16;
    max_pos = std::max(max_pos, n);
  }
  const int physical = total + 3;
  s.page_stride = int64_t{kLayers} * 16 * kv_heads * 2 * dim;
  s.layer_base = int64_t{kLayer} * 16 * kv_heads * 2 * dim;
  // Earlier positions hold random k / v; the rest (and the new slots) random too, so a missed write shows.
  s.cache = random_bf16(rng, static_cast<size_t>(physical * s.page_stride), -1.0f, 1.0f);
  std::vector<int32_t> pages(physical);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  s.tables.assign(static_cast<size_t>(s.rows()) * s.pages_per_seq, -1);
  int next = 0;
  for (int r = 0; r < s.rows(); ++r)
    for (int p = 0; p < (s.ctx[r] + 15) / 16; ++p) s.tables[r * s.pages_per_seq + p] = pages[next++];
  s.qkv = random_bf16(rng, static_cast<size_t>(s.rows()) * s.stride, -3.0f, 3.0f);
  s.qw = random_bf16(rng, dim, 0.5f, 1.5f);
  s.kw = random_bf16(rng, dim, 0.5f, 1.5f);
  s.cos_sin.resize(static_cast<size_t>(max_pos) * dim);
  for (int p = 0; p < max_pos; ++p)
    for (int i = 0; i < dim / 2; ++i) {
      const double a = p * std::pow(1e6, -2.0 * i / dim);
      s.cos_sin[static_cast<size_t>(p) * dim + i] = static_cast<float>(std::cos(a));
      s.cos_sin[static_cast<size_t>(p) * dim + dim / 2 + i] = static_cast<float>(std::sin(a));
    }
  return s;
}

struct Result {
  std::vector<uint16_t> out, cache;
};

/// A norm weight param: null when rope_flags says there is no q/k norm (a read would fail the launch).
const uint16_t* norm_w(const Step& s, const std::vector<uint16_t>& w) { return (s.neox & 2) != 0 ? nullptr : w.data(); }

/// The fused launch (`symbol`) over all rows; counters must be back at zero.
Result run_fused(const Step& s, const char* symbol) {
  Result res{std::vector<uint16_t>(static_cast<size_t>(s.rows()) * s.heads * s.dim, kPoison), s.cache};
  std::vector<float> po(static_cast<size_t>(s.rows()) * s.heads * s.splits * s.dim, kNanF);
  std::vector<float> pml(static_cast<size_t>(s.rows()) * s.heads * s.splits * 2, kNanF);
  std::vector<int32_t> counters(static_cast<size_t>(s.rows()) * s.kv_heads, 0);
  ArgPack a;
  a.add(s.qkv.data()).add(norm_w(s, s.qw)).add(norm_w(s, s.kw)).add(s.cos_sin.data());
  a.add(res.cache.data() + s.layer_base).add(s.tables.data()).add(s.ctx.data()).add(s.k_scale.data()).add(s.v_scale.data());
  a.add(po.data()).add(pml.data()).add(counters.data()).add(res.out.data());
  a.add<int32_t>(s.rows()).add<int32_t>(s.heads).add<int32_t>(s.kv_heads).add<int32_t>(s.dim);
  a.add<int64_t>(s.page_stride).add(s.scale()).add<int32_t>(s.pages_per_seq).add<int32_t>(s.splits);
  a.add<int32_t>(s.stride).add(kEps).add<uint8_t>(s.neox);
  launch_ok(symbol, a, s.kv_heads, s.splits, s.rows());
  for (const int32_t c : counters) CHECK(c == 0);
  return res;
}

/// kern_qk_norm_rope_cache_bf16 over the rows (position ctx - 1, slot from
/// the row's table; a free row gets slot -1), into `cache`; returns q_out.
std::vector<uint16_t> run_qk(const Step& s, std::vector<uint16_t>& cache) {
  std::vector<int64_t> pos(s.rows()), slots(s.rows());
  for (int r = 0; r < s.rows(); ++r) {
    const int p = std::max(s.ctx[r] - 1, 0);
    pos[r] = p;
    slots[r] = s.ctx[r] > 0 ? int64_t{s.tables[r * s.pages_per_seq + p / 16]} * 16 + p % 16 : -1;
  }
  std::vector<uint16_t> q(static_cast<size_t>(s.rows()) * s.heads * s.dim, kPoison);
  ArgPack a;
  a.add(s.qkv.data()).add(norm_w(s, s.qw)).add(norm_w(s, s.kw)).add(pos.data()).add(s.cos_sin.data()).add(q.data());
  a.add(cache.data() + s.layer_base).add(slots.data()).add(s.k_scale.data()).add(s.v_scale.data());
  a.add<int32_t>(s.rows()).add<int32_t>(s.heads).add<int32_t>(s.kv_heads).add<int32_t>(s.dim);
  a.add<int32_t>(s.stride).add(s.page_stride).add(kEps).add<uint8_t>(s.neox);
  launch_ok("kern_qk_norm_rope_cache_bf16", a, static_cast<uint32_t>((s.heads + 2 * s.kv_heads + 3) / 4),
            static_cast<uint32_t>(s.rows()));
  return q;
}

/// The two-launch batch path: qk_norm_rope_cache + kern_attention_decode_batch_bf16.
Result run_pair_batch(const Step& s) {
  Result res{std::vector<uint16_t>(static_cast<size_t>(s.rows()) * s.heads * s.dim, kPoison), s.cache};
  const std::vector<uint16_t> q = run_qk(s, res.cache);
  std::vector<float> po(static_cast<size_t>(s.rows()) * s.heads * s.splits * s.dim, kNanF);
  std::vector<float> pml(static_cast<size_t>(s.rows()) * s.heads * s.splits * 2, kNanF);
  std::vector<int32_t> counters(static_cast<size_t>(s.rows()) * s.kv_heads, 0);
  ArgPack a;
  a.add(q.data()).add(res.cache.data() + s.layer_base).add(s.tables.data()).add(s.ctx.data());
  a.add(s.k_scale.data()).add(s.v_scale.data()).add(po.data()).add(pml.data()).add(counters.data());
  a.add(res.out.data()).add<int32_t>(s.rows()).add<int32_t>(s.heads).add<int32_t>(s.kv_heads).add<int32_t>(s.dim);
  a.add<int64_t>(s.page_stride).add(s.scale()).add<int32_t>(s.pages_per_seq).add<int32_t>(s.splits);
  launch_ok("kern_attention_decode_batch_bf16", a, s.kv_heads, s.splits, s.rows());
  return res;
}

/// The two-launch batch-1 decode path: qk_norm_rope_cache + kern_attention_decode_bf16 (one query).
Result run_pair_single(const Step& s) {
  REQUIRE(s.rows() == 1);
  Result res{std::vector<uint16_t>(static_cast<size_t>(s.heads) * s.dim, kPoison), s.cache};
  const std::vector<uint16_t> q = run_qk(s, res.cache);
  int32_t cu[2] = {0, 1};
  std::vector<float> po(static_cast<size_t>(s.heads) * s.splits * s.dim, kNanF);
  std::vector<float> pml(static_cast<size_t>(s.heads) * s.splits * 2, kNanF);
  std::vector<int32_t> counters(s.kv_heads, 0);
  ArgPack a;
  a.add(q.data()).add(res.cache.data() + s.layer_base).add(s.tables.data()).add(s.ctx.data()).add(&cu[0]);
  a.add(s.k_scale.data()).add(s.v_scale.data()).add(po.data()).add(pml.data()).add(counters.data());
  a.add(res.out.data()).add<int32_t>(1).add<int32_t>(s.heads).add<int32_t>(s.kv_heads).add<int32_t>(s.dim);
  a.add<int64_t>(s.page_stride).add(s.scale()).add<int32_t>(s.splits);
  launch_ok("kern_attention_decode_bf16", a, s.kv_heads, s.splits, 1);
  return res;
}

}  // namespace

TEST_CASE("the batch-1 decode's qkv attention equals qk_norm_rope_cache + attention_decode bit for bit",
          "[kernels][attention][qkv]") {
  std::mt19937 rng(2601);
  struct Geo {
    int heads, kv_heads, dim, ctx, splits;
  };
  for (const Geo g : {Geo{4, 2, 16, 37, 32}, Geo{32, 8, 128, 300, 32}, Geo{8, 1, 64, 5, 32}, Geo{4, 4, 96, 17, 16},
                      Geo{2, 1, 10, 1, 64}}) {
    // rope_flags: neox, interleaved, and both without q/k norm (Llama).
    for (const uint8_t neox : {uint8_t{1}, uint8_t{0}, uint8_t{3}, uint8_t{2}}) {
      INFO("H " << g.heads << " KV " << g.kv_heads << " D " << g.dim << " ctx " << g.ctx << " rope_flags " << int(neox));
      Step s = make_step({g.ctx}, g.heads, g.kv_heads, g.dim, g.splits, rng);
      s.neox = neox;
      const Result fused = run_fused(s, "kern_attention_decode_qkv_bf16");
      const Result pair = run_pair_single(s);
      CHECK(fused.out == pair.out);
      CHECK(fused.cache == pair.cache);
      CHECK(fused.cache != s.cache);  // the new k / v were written
      // The batch variant's twin gives the same row.
      CHECK(run_fused(s, "kern_attention_decode_batch_qkv_bf16").out == fused.out);
    }
  }
}

TEST_CASE("decode_batch's qkv attention equals qk_norm_rope_cache + attention_decode_batch bit for bit",
          "[kernels][attention][qkv][batch]") {
  std::mt19937 rng(2602);
  struct Geo {
    int heads, kv_heads, dim;
  };
  // Geo{16, 8, 128} (Qwen3-0.6B's heads) is enough work for the prologue's
  // rows to run on threads; the others stay on one.
  for (const auto& [g, flags] : std::vector<std::pair<Geo, uint8_t>>{
           {Geo{4, 2, 16}, 1}, {Geo{8, 1, 64}, 1}, {Geo{2, 2, 128}, 1}, {Geo{4, 4, 96}, 1}, {Geo{16, 8, 128}, 1},
           {Geo{3, 3, 32}, 3}, {Geo{32, 8, 64}, 3}}) {  // rope_flags 3: no q/k norm (Llama)
    INFO("H " << g.heads << " KV " << g.kv_heads << " D " << g.dim << " rope_flags " << int(flags));
    Step s = make_step({37, 1, 0, 100, 16, -3, 5}, g.heads, g.kv_heads, g.dim, 16, rng);
    s.neox = flags;
    const Result fused = run_fused(s, "kern_attention_decode_batch_qkv_bf16");
    const Result pair = run_pair_batch(s);
    CHECK(fused.out == pair.out);
    CHECK(fused.cache == pair.cache);
    // Free rows (2: length 0, 5: negative) get zeros; their pages (none) and every other byte untouched:
    // exactly the new slots of the rows with context changed.
    const size_t row = static_cast<size_t>(s.heads) * s.dim;
    for (const int r : {2, 5})
      for (size_t i = 0; i < row; ++i) CHECK(fused.out[r * row + i] == 0);
    size_t changed_outside = 0;
    std::vector<bool> fresh(s.cache.size(), false);
    for (int r = 0; r < s.rows(); ++r) {
      if (s.ctx[r] <= 0) continue;
      const int p = s.ctx[r] - 1;
      const int64_t base = int64_t{s.tables[r * s.pages_per_seq + p / 16]} * s.page_stride + s.layer_base +
                           int64_t{p % 16} * s.kv_heads * 2 * s.dim;
      for (int64_t i = 0; i < int64_t{s.kv_heads} * 2 * s.dim; ++i) fresh[base + i] = true;
    }
    for (size_t i = 0; i < s.cache.size(); ++i) changed_outside += !fresh[i] && fused.cache[i] != s.cache[i];
    CHECK(changed_outside == 0);
    // Each row alone: the same bits (batch invariance).
    for (int r = 0; r < s.rows(); ++r) {
      INFO("row " << r);
      Step one = s;
      one.ctx = {s.ctx[r]};
      one.tables.assign(s.tables.begin() + r * s.pages_per_seq, s.tables.begin() + (r + 1) * s.pages_per_seq);
      one.qkv.assign(s.qkv.begin() + r * s.stride, s.qkv.begin() + (r + 1) * s.stride);
      const Result alone = run_fused(one, "kern_attention_decode_batch_qkv_bf16");
      CHECK(std::equal(alone.out.begin(), alone.out.end(), fused.out.begin() + r * row));
    }
  }
}

TEST_CASE("the qkv attention rejects an odd head_dim, too many splits, a short RoPE table and a padded page",
          "[kernels][attention][qkv]") {
  std::mt19937 rng(2603);
  const auto error_of = [](const Step& s, const char* symbol) {
    std::vector<uint16_t> out(static_cast<size_t>(s.rows()) * s.heads * s.dim), cache = s.cache;
    std::vector<float> po(static_cast<size_t>(s.rows()) * s.heads * s.splits * s.dim);
    std::vector<float> pml(static_cast<size_t>(s.rows()) * s.heads * s.splits * 2);
    std::vector<int32_t> counters(static_cast<size_t>(s.rows()) * s.kv_heads, 0);
    ArgPack a;
    a.add(s.qkv.data()).add(s.qw.data()).add(s.kw.data()).add(s.cos_sin.data()).add(cache.data() + s.layer_base);
    a.add(s.tables.data()).add(s.ctx.data()).add(s.k_scale.data()).add(s.v_scale.data());
    a.add(po.data()).add(pml.data()).add(counters.data()).add(out.data());
    a.add<int32_t>(s.rows()).add<int32_t>(s.heads).add<int32_t>(s.kv_heads).add<int32_t>(s.dim);
    a.add<int64_t>(s.page_stride).add(s.scale()).add<int32_t>(s.pages_per_seq).add<int32_t>(s.splits);
    a.add<int32_t>(s.stride).add(kEps).add<uint8_t>(s.neox);
    const kern::Status st = launch(symbol, a, s.kv_heads, s.splits, s.rows());
    REQUIRE_FALSE(st.ok());
    CHECK(cache == s.cache);  // nothing written
    return st.error().message;
  };
  {
    const Step s = make_step({20}, 2, 1, 15, 16, rng);
    CHECK(error_of(s, "kern_attention_decode_qkv_bf16").find("param 16 (head_dim) is 15; must be even and <= 512") !=
          std::string::npos);
  }
  {
    const Step s = make_step({20}, 2, 1, 16, 65, rng);
    CHECK(error_of(s, "kern_attention_decode_qkv_bf16").find("param 20 (num_splits) is 65; must be <= 64") !=
          std::string::npos);
  }
  {
    const Step s = make_step({20}, 2, 1, 288, 16, rng);
    CHECK(error_of(s, "kern_attention_decode_batch_qkv_bf16")
              .find("param 16 (head_dim) is 288; must be even and <= 256") != std::string::npos);
  }
  {
    Step s = make_step({20, 40}, 2, 1, 16, 16, rng);
    s.tables[1 * s.pages_per_seq + 2 - 1] = -1;  // row 1's second page, inside its 40 positions
    CHECK(error_of(s, "kern_attention_decode_batch_qkv_bf16")
              .find("block_tables[1, 1] is -1; must be >= 0 (seq_lens[1] = 40 uses it)") != std::string::npos);
  }
  {
    Step s = make_step({20}, 2, 1, 16, 16, rng);
    s.cos_sin.resize(static_cast<size_t>(19) * s.dim);  // rows 0 .. 18: position 19 is missing
    std::vector<uint16_t> out(static_cast<size_t>(s.heads) * s.dim), cache = s.cache;
    std::vector<float> po(static_cast<size_t>(s.heads) * s.splits * s.dim), pml(static_cast<size_t>(s.heads) * s.splits * 2);
    std::vector<int32_t> counters(s.kv_heads, 0);
    ArgPack a;
    a.add(s.qkv.data()).add(s.qw.data()).add(s.kw.data()).add(s.cos_sin.data()).add(cache.data() + s.layer_base);
    a.add(s.tables.data()).add(s.ctx.data()).add(s.k_scale.data()).add(s.v_scale.data());
    a.add(po.data()).add(pml.data()).add(counters.data()).add(out.data());
    a.add<int32_t>(1).add<int32_t>(s.heads).add<int32_t>(s.kv_heads).add<int32_t>(s.dim);
    a.add<int64_t>(s.page_stride).add(s.scale()).add<int32_t>(s.pages_per_seq).add<int32_t>(s.splits);
    a.add<int32_t>(s.stride).add(kEps).add<uint8_t>(s.neox);
    const kern::cpu::CpuKernel* k = kern::cpu::find_cpu_kernel("kern_attention_decode_qkv_bf16");
    REQUIRE(k != nullptr);
    std::vector<uint64_t> avail(24, 0);
    avail[3] = s.cos_sin.size() * 4;
    avail[4] = (cache.size() - static_cast<size_t>(s.layer_base)) * 2;
    kern::cpu::CpuLaunch l;
    l.grid[0] = s.kv_heads;
    l.grid[1] = s.splits;
    l.grid[2] = 1;
    l.block[0] = 128;
    l.args = a.data();
    l.num_args = a.size();
    l.avail = avail.data();
    const kern::Status st = k->run(l);
    REQUIRE_FALSE(st.ok());
    INFO(st.error().message);
    CHECK(st.error().message.find("cos_sin_cache") != std::string::npos);
    CHECK(st.error().message.find("position 19") != std::string::npos);
    CHECK(cache == s.cache);
  }
}
