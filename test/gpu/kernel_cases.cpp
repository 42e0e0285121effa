// The comparison cases (kernel_cases.h): shapes per kernel, random inputs.
// Odd shapes exercise the scalar fallbacks (row lengths not a multiple of 8,
// head_dim not a multiple of 32), short contexts leave attention splits empty,
// argmax rows carry NaN, ties and -inf; the decode advance crosses a page
// and the block table's end.
#include "test/gpu/kernel_cases.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "common/bf16.h"

namespace kern::gpu_test {

CaseArg arg_i32(int32_t v) { return CaseArg{-1, 0, static_cast<uint32_t>(v), 4}; }
CaseArg arg_i64(int64_t v) { return CaseArg{-1, 0, static_cast<uint64_t>(v), 8}; }
CaseArg arg_f32(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return CaseArg{-1, 0, b, 4};
}
CaseArg arg_u8(uint8_t v) { return CaseArg{-1, 0, v, 1}; }
CaseArg arg_buf(int buffer, uint64_t offset) { return CaseArg{buffer, offset, 0, 0}; }

namespace {

/// splitmix64: small, deterministic, good enough for test data.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) / 16777216.0f; }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo)); }

 private:
  uint64_t s_;
};

std::vector<uint8_t> bf16_random(Rng& r, size_t n, float lo, float hi) {
  std::vector<uint8_t> out(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t b = f32_to_bf16(r.uniform(lo, hi));
    std::memcpy(&out[i * 2], &b, 2);
  }
  return out;
}

template <typename T>
std::vector<uint8_t> pod_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<uint8_t> poison(size_t bytes) { return std::vector<uint8_t>(bytes, 0xFF); }

/// Builds one case.
struct Builder {
  Case c;
  int buf(const std::string& name, std::vector<uint8_t> bytes, Compare cmp = Compare::kNone) {
    c.buffers.push_back(CaseBuffer{name, std::move(bytes), cmp});
    return static_cast<int>(c.buffers.size()) - 1;
  }
  /// Marks buffer `i` as rows of `row` bf16 holding heads of `dim` rotated in pairs.
  void pairs(int i, int row, int dim, bool neox) {
    c.buffers[i].pair_row = static_cast<uint32_t>(row);
    c.buffers[i].pair_dim = static_cast<uint32_t>(dim);
    c.buffers[i].pair_neox = neox;
  }
  void launch(const char* fatbin, const char* symbol, std::initializer_list<uint32_t> grid, uint32_t block,
              std::vector<CaseArg> args) {
    CaseLaunch l;
    l.fatbin = fatbin;
    l.symbol = symbol;
    std::copy(grid.begin(), grid.end(), l.grid);
    l.block[0] = block;
    l.args = std::move(args);
    c.launches.push_back(std::move(l));
  }
};

std::string shape(const char* kernel, std::initializer_list<std::pair<const char*, int64_t>> dims) {
  std::string s = kernel;
  for (auto& [k, v] : dims) s += std::string(" ") + k + "=" + std::to_string(v);
  return s;
}

Case embedding(Rng& r, int t, int e, int v, bool bench) {
  Builder b{{shape("embedding", {{"T", t}, {"E", e}, {"V", v}}), {}, {}, 8.0 * t + 4.0 * t * e, bench}};
  std::vector<int64_t> ids(t);
  for (auto& id : ids) id = r.range(0, v);
  if (t >= 3) ids[1] = -1, ids[2] = v;  // out of range: zero rows
  const int i = b.buf("token_ids", pod_bytes(ids));
  const int tab = b.buf("table", bf16_random(r, size_t(v) * e, -2, 2));
  const int o = b.buf("out", poison(size_t(t) * e * 2), Compare::kExact);
  b.launch("embedding.fatbin", "kern_embedding_bf16", {uint32_t(t), 1, 1}, 128,
           {arg_buf(i), arg_buf(tab), arg_buf(o), arg_i32(t), arg_i32(e), arg_i32(v)});
  return b.c;
}

Case rmsnorm(Rng& r, int rows, int n, bool add, bool bench) {
  Builder b{{shape(add ? "add_rmsnorm" : "rmsnorm", {{"rows", rows}, {"n", n}}), {}, {},
             2.0 * n + (add ? 8.0 : 4.0) * rows * n, bench}};
  const int x = b.buf("x", bf16_random(r, size_t(rows) * n, -3, 3));
  const int res = add ? b.buf("residual", bf16_random(r, size_t(rows) * n, -3, 3), Compare::kBf16) : -1;
  const int w = b.buf("weight", bf16_random(r, n, 0.5f, 1.5f));
  const int y = b.buf("y", poison(size_t(rows) * n * 2), Compare::kBf16);
  if (add)
    b.launch("rmsnorm.fatbin", "kern_add_rmsnorm_bf16", {uint32_t(rows), 1, 1}, 256,
             {arg_buf(x), arg_buf(res), arg_buf(w), arg_buf(y), arg_i32(rows), arg_i32(n), arg_f32(1e-6f)});
  else
    b.launch("rmsnorm.fatbin", "kern_rmsnorm_bf16", {uint32_t(rows), 1, 1}, 256,
             {arg_buf(x), arg_buf(w), arg_buf(y), arg_i32(rows), arg_i32(n), arg_f32(1e-6f)});
  return b.c;
}

/// q/k norm over a fused row: x rows of x_stride elements, heads at element `x_off`.
Case head_rmsnorm(Rng& r, int t, int heads, int d, int x_stride, int x_off, bool bench) {
  Builder b{{shape("head_rmsnorm", {{"T", t}, {"heads", heads}, {"D", d}, {"x_stride", x_stride}}), {}, {},
             2.0 * d + 4.0 * t * heads * d, bench}};
  const int y_stride = heads * d;
  const int x = b.buf("x", bf16_random(r, size_t(t) * x_stride, -3, 3));
  const int w = b.buf("weight", bf16_random(r, d, 0.5f, 1.5f));
  const int y = b.buf("y", poison(size_t(t) * y_stride * 2), Compare::kBf16);
  const int total = t * heads;
  b.launch("rmsnorm.fatbin", "kern_head_rmsnorm_bf16", {uint32_t((total + 3) / 4), 1, 1}, 128,
           {arg_buf(x, uint64_t(x_off) * 2), arg_buf(w), arg_buf(y), arg_i32(total), arg_i32(heads), arg_i32(d),
            arg_i32(x_stride), arg_i32(y_stride), arg_f32(1e-6f)});
  return b.c;
}

Case rope(Rng& r, int t, int hq, int hk, int d, int pad, bool neox, bool bench) {
  Builder b{{shape(neox ? "rope neox" : "rope gptj", {{"T", t}, {"Hq", hq}, {"Hk", hk}, {"D", d}, {"pad", pad}}),
             {}, {}, 8.0 * t + 4.0 * d * t + 4.0 * d * t * (hq + hk), bench}};
  const int max_pos = 4096;
  std::vector<int64_t> pos(t);
  for (auto& p : pos) p = r.range(0, max_pos);
  std::vector<float> cache(size_t(max_pos) * d);
  for (int p = 0; p < max_pos; ++p)
    for (int i = 0; i < d / 2; ++i) {
      const double f = p * std::pow(1e6, -2.0 * i / d);
      cache[size_t(p) * d + i] = float(std::cos(f));
      cache[size_t(p) * d + d / 2 + i] = float(std::sin(f));
    }
  const int q_stride = hq * d + pad, k_stride = hk * d + pad;
  const int ps = b.buf("positions", pod_bytes(pos));
  const int q = b.buf("q", bf16_random(r, size_t(t) * q_stride, -2, 2), Compare::kBf16);
  const int k = b.buf("k", bf16_random(r, size_t(t) * k_stride, -2, 2), Compare::kBf16);
  b.pairs(q, q_stride, d, neox);
  b.pairs(k, k_stride, d, neox);
  const int cs = b.buf("cos_sin_cache", pod_bytes(cache));
  b.launch("rope.fatbin", "kern_rope_bf16", {uint32_t(t), 1, 1}, 128,
           {arg_buf(ps), arg_buf(q), arg_buf(k), arg_buf(cs), arg_i32(t), arg_i32(hq), arg_i32(hk), arg_i32(d),
            arg_i32(q_stride), arg_i32(k_stride), arg_u8(neox ? 1 : 0)});
  return b.c;
}

Case silu(Rng& r, int t, int d, bool bench) {
  Builder b{{shape("silu_and_mul", {{"T", t}, {"d", d}}), {}, {}, 6.0 * t * d, bench}};
  const int gu = b.buf("gate_up", bf16_random(r, size_t(t) * 2 * d, -6, 6));
  const int o = b.buf("out", poison(size_t(t) * d * 2), Compare::kBf16);
  b.launch("silu_and_mul.fatbin", "kern_silu_and_mul_bf16", {uint32_t(t), 1, 1}, 256,
           {arg_buf(gu), arg_buf(o), arg_i32(t), arg_i32(d)});
  return b.c;
}

/// Bias add in place (docs/kernels.md §6a): `rows` rows of stride `ld` >= n
/// (the merged qkv rows of Qwen2), the padding left alone.
Case bias_add(Rng& r, int rows, int n, int ld, bool bench) {
  Builder b{{shape("bias_add", {{"rows", rows}, {"n", n}, {"ld", ld}}), {}, {}, 4.0 * rows * n + 2.0 * n, bench}};
  const int x = b.buf("x", bf16_random(r, size_t(rows) * ld, -4, 4), Compare::kBf16);
  const int bias = b.buf("bias", bf16_random(r, size_t(n), -2, 2));
  b.launch("bias_add.fatbin", "kern_bias_add_bf16", {uint32_t(rows), 1, 1}, 256,
           {arg_buf(x), arg_buf(bias), arg_i32(rows), arg_i32(n), arg_i32(ld)});
  return b.c;
}

/// The mixture-of-experts MLP of one layer (docs/kernels.md §18): the
/// router, the selected experts' gate/up + SiLU*mul, their weighted down
/// projections into the residual, over `rows` rows. The byte count is the
/// active experts' weights (what a decode step reads: top_k of `experts`)
/// plus the router's. Ids and weights compare exactly (the emulator runs the
/// twin's order; on a GPU a last-bit expf difference could swap a near-tie).
Case moe(Rng& r, int rows, int experts, int e, int i, int top_k, bool norm, bool bench) {
  const double active = double(rows) * top_k * 3.0 * i * e * 2.0;
  Builder b{{shape("moe", {{"rows", rows}, {"experts", experts}, {"E", e}, {"I", i}, {"top_k", top_k}}), {}, {},
             active + 2.0 * experts * e + 8.0 * rows * e, bench}};
  const int x = b.buf("normed", bf16_random(r, size_t(rows) * e, -2, 2));
  const int gw = b.buf("router", bf16_random(r, size_t(experts) * e, -0.2f, 0.2f));
  const int gu = b.buf("gate_up", bf16_random(r, size_t(experts) * 2 * i * e, -0.05f, 0.05f));
  const int dw = b.buf("down", bf16_random(r, size_t(experts) * e * i, -0.05f, 0.05f));
  const int tw = b.buf("topk_weights", poison(size_t(rows) * top_k * 4), Compare::kF32);
  const int ti = b.buf("topk_ids", poison(size_t(rows) * top_k * 4), Compare::kExact);
  const int act = b.buf("act", poison(size_t(rows) * top_k * i * 2), Compare::kBf16);
  const int res = b.buf("residual", bf16_random(r, size_t(rows) * e, -3, 3), Compare::kBf16);
  b.launch("moe.fatbin", "kern_moe_router_bf16", {uint32_t(rows), 1, 1}, 128,
           {arg_buf(x), arg_buf(gw), arg_buf(tw), arg_buf(ti), arg_i32(rows), arg_i32(experts), arg_i32(e),
            arg_i32(top_k), arg_u8(norm ? 1 : 0)});
  b.launch("moe.fatbin", "kern_moe_gate_up_bf16", {uint32_t((i + 3) / 4), uint32_t(top_k), uint32_t(rows)}, 128,
           {arg_buf(x), arg_buf(gu), arg_buf(ti), arg_buf(act), arg_i32(rows), arg_i32(experts), arg_i32(i),
            arg_i32(e), arg_i32(top_k)});
  b.launch("moe.fatbin", "kern_moe_down_bf16", {uint32_t((e + 3) / 4), uint32_t(rows), 1}, 128,
           {arg_buf(act), arg_buf(dw), arg_buf(ti), arg_buf(tw), arg_buf(res), arg_i32(rows), arg_i32(experts),
            arg_i32(e), arg_i32(i), arg_i32(top_k)});
  return b.c;
}

/// A 2-layer paged cache: [pages][2 layers][16][kv][2][d]; kernels get layer 1.
struct Cache {
  int kv, d, pages;
  int64_t page_stride() const { return 2LL * 16 * kv * 2 * d; }
  uint64_t layer1_offset_bytes() const { return uint64_t(16) * kv * 2 * d * 2; }
  size_t elems() const { return size_t(pages) * page_stride(); }
};

Case reshape_and_cache(Rng& r, int t, int kv, int d, float k_scale, bool bench) {
  Builder b{{shape("reshape_and_cache", {{"T", t}, {"KV", kv}, {"D", d}}), {}, {}, 16.0 + 8.0 * t * (1 + kv * d),
             bench}};
  const Cache c{kv, d, 8};
  std::vector<int64_t> slots(size_t(c.pages) * 16);
  std::iota(slots.begin(), slots.end(), 0);
  for (size_t i = slots.size() - 1; i > 0; --i) std::swap(slots[i], slots[size_t(r.range(0, int64_t(i) + 1))]);
  slots.resize(t);
  if (t >= 2) slots[1] = -1;  // padding token: skipped
  const int stride = 3 * kv * d;  // k and v are views of a fused [T, (kv + kv + kv) d] row
  const int qkv = b.buf("kv_rows", bf16_random(r, size_t(t) * stride, -2, 2));
  const int cache = b.buf("kv_cache", bf16_random(r, c.elems(), -1, 1), Compare::kBf16);
  const int sm = b.buf("slot_mapping", pod_bytes(slots));
  const int ks = b.buf("k_scale", pod_bytes(std::vector<float>{k_scale}));
  const int vs = b.buf("v_scale", pod_bytes(std::vector<float>{1.0f}));
  b.launch("reshape_and_cache.fatbin", "kern_reshape_and_cache_bf16", {uint32_t(t), 1, 1}, 128,
           {arg_buf(qkv, uint64_t(kv) * d * 2), arg_buf(qkv, uint64_t(2 * kv) * d * 2),
            arg_buf(cache, c.layer1_offset_bytes()), arg_buf(sm), arg_buf(ks), arg_buf(vs), arg_i32(t), arg_i32(kv),
            arg_i32(d), arg_i32(stride), arg_i32(stride), arg_i64(c.page_stride())});
  return b.c;
}

/// Shared inputs of the attention cases: q, a randomly paged cache holding
/// `ctx` positions, block table, seq_lens = ctx, cu_seqlens_q = [0, t].
struct AttnInputs {
  int q, cache, table, seq_lens, cu, ks, vs;
  Cache c;
};

AttnInputs attn_inputs(Builder& b, Rng& r, int t, int h, int kv, int d, int ctx, float v_scale) {
  const Cache c{kv, d, (ctx + 15) / 16 + 3};
  std::vector<int32_t> table(c.pages);
  std::iota(table.begin(), table.end(), 0);
  for (size_t i = table.size() - 1; i > 0; --i) std::swap(table[i], table[size_t(r.range(0, int64_t(i) + 1))]);
  AttnInputs in{};
  in.c = c;
  in.q = b.buf("q", bf16_random(r, size_t(t) * h * d, -1, 1));
  in.cache = b.buf("kv_cache", bf16_random(r, c.elems(), -1, 1));
  in.table = b.buf("block_table", pod_bytes(table));
  in.seq_lens = b.buf("seq_lens", pod_bytes(std::vector<int32_t>{ctx}));
  in.cu = b.buf("cu_seqlens_q", pod_bytes(std::vector<int32_t>{0, t}));
  in.ks = b.buf("k_scale", pod_bytes(std::vector<float>{1.0f}));
  in.vs = b.buf("v_scale", pod_bytes(std::vector<float>{v_scale}));
  return in;
}

std::vector<CaseArg> attn_head_args(const AttnInputs& in) {
  return {arg_buf(in.q), arg_buf(in.cache, in.c.layer1_offset_bytes()), arg_buf(in.table), arg_buf(in.seq_lens),
          arg_buf(in.cu), arg_buf(in.ks), arg_buf(in.vs)};
}

Case attention_decode(Rng& r, int t, int h, int kv, int d, int ctx, float v_scale, bool bench) {
  const int s = 16;
  Builder b{{shape("attention_decode", {{"T", t}, {"H", h}, {"KV", kv}, {"D", d}, {"ctx", ctx}}), {}, {},
             4.0 * d * ctx * kv + 2.0 * t * h * d * 2 + 2.0 * 4 * (d + 2) * t * h * s, bench}};
  const AttnInputs in = attn_inputs(b, r, t, h, kv, d, ctx, v_scale);
  const int po = b.buf("partial_o", poison(size_t(t) * h * s * d * 4), Compare::kF32);
  const int pml = b.buf("partial_ml", poison(size_t(t) * h * s * 2 * 4), Compare::kF32);
  const int out = b.buf("out", poison(size_t(t) * h * d * 2), Compare::kBf16);
  const float scale = 1.0f / std::sqrt(float(d));
  std::vector<CaseArg> a = attn_head_args(in);
  for (CaseArg x : {arg_buf(po), arg_buf(pml), arg_i32(t), arg_i32(h), arg_i32(kv), arg_i32(d),
                    arg_i64(in.c.page_stride()), arg_f32(scale), arg_i32(s)})
    a.push_back(x);
  b.launch("paged_attention.fatbin", "kern_paged_attention_partial_bf16", {uint32_t(h), uint32_t(s), uint32_t(t)},
           128, a);
  b.launch("paged_attention.fatbin", "kern_paged_attention_reduce_bf16", {uint32_t(h), uint32_t(t), 1}, 128,
           {arg_buf(po), arg_buf(pml), arg_buf(out), arg_i32(t), arg_i32(h), arg_i32(d), arg_i32(s)});
  return b.c;
}

/// The one-step attention: prefill (causal) or, with `noncausal`, the
/// speculative draft's kern_paged_attention_noncausal_bf16 (same ABI).
Case attention_prefill(Rng& r, int t, int h, int kv, int d, int ctx, bool bench, bool noncausal = false) {
  Builder b{{shape(noncausal ? "attention_noncausal" : "attention_prefill",
                   {{"T", t}, {"H", h}, {"KV", kv}, {"D", d}, {"ctx", ctx}}), {}, {},
             4.0 * d * ctx * kv + 4.0 * t * h * d, bench}};
  const AttnInputs in = attn_inputs(b, r, t, h, kv, d, ctx, 1.0f);
  const int out = b.buf("out", poison(size_t(t) * h * d * 2), Compare::kBf16);
  std::vector<CaseArg> a = attn_head_args(in);
  for (CaseArg x : {arg_buf(out), arg_i32(t), arg_i32(h), arg_i32(kv), arg_i32(d), arg_i64(in.c.page_stride()),
                    arg_f32(1.0f / std::sqrt(float(d)))})
    a.push_back(x);
  b.launch("paged_attention.fatbin",
           noncausal ? "kern_paged_attention_noncausal_bf16" : "kern_paged_attention_prefill_bf16",
           {uint32_t(h), uint32_t(t), 1}, 128, a);
  return b.c;
}

Case argmax(Rng& r, int rows, int v, bool specials, bool bench) {
  const int chunks = 64;
  Builder b{{shape("argmax", {{"rows", rows}, {"V", v}}), {}, {}, 2.0 * rows * v + 16.0 * rows * chunks, bench}};
  std::vector<uint8_t> logits = bf16_random(r, size_t(rows) * v, -8, 8);
  auto set = [&](int row, int i, float x) {
    const uint16_t bits = f32_to_bf16(x);
    std::memcpy(&logits[(size_t(row) * v + i) * 2], &bits, 2);
  };
  if (specials) {
    set(0, v / 3, 20.0f);      // a tie: the smaller index must win
    set(0, 2 * v / 3, 20.0f);
    set(0, 5, std::nanf(""));  // NaN never wins
    if (rows > 1)
      for (int i = 0; i < v; ++i) set(1, i, i % 2 ? -INFINITY : std::nanf(""));  // -inf and NaN only
    if (rows > 2)
      for (int i = 0; i < v; ++i) set(2, i, std::nanf(""));  // all NaN: INT32_MAX
  }
  const int lg = b.buf("logits", std::move(logits));
  const int pv = b.buf("partial_val", poison(size_t(rows) * chunks * 4), Compare::kF32);
  const int pi = b.buf("partial_idx", poison(size_t(rows) * chunks * 4), Compare::kExact);
  const int nt = b.buf("next_token", poison(size_t(rows) * 8), Compare::kExact);
  b.launch("argmax.fatbin", "kern_argmax_partial_bf16", {uint32_t(chunks), uint32_t(rows), 1}, 256,
           {arg_buf(lg), arg_buf(pv), arg_buf(pi), arg_i32(rows), arg_i32(v), arg_i32(chunks)});
  b.launch("argmax.fatbin", "kern_argmax_reduce", {uint32_t(rows), 1, 1}, 64,
           {arg_buf(pv), arg_buf(pi), arg_buf(nt), arg_i32(rows), arg_i32(chunks)});
  return b.c;
}


/// Random sampling (docs/kernels.md §15): rows with different parameters
/// (one greedy, one all-NaN, ties, every cut), the argmax's ids in
/// next_token; the sampled ids compared exactly (the histogram state starts
/// and ends at zero, so it is not a compared output; the twin errors on a
/// non-zero count it finds).
Case sample(Rng& r, int rows, int v, bool bench) {
  Builder b{{shape("sample", {{"rows", rows}, {"V", v}}), {}, {}, 4.0 * rows * v + 3.0 * 4 * 65536 * rows, bench}};
  std::vector<uint8_t> logits = bf16_random(r, size_t(rows) * v, -6, 4);
  auto set = [&](int row, int i, float x) {
    const uint16_t bits = f32_to_bf16(x);
    std::memcpy(&logits[(size_t(row) * v + i) * 2], &bits, 2);
  };
  std::vector<float> t(rows), tp(rows), mp(rows);
  std::vector<int32_t> tk(rows);
  std::vector<int64_t> seed(rows), pos(rows), next(rows);
  for (int i = 0; i < rows; ++i) {
    t[i] = 0.4f + 0.3f * float(i % 5);
    tk[i] = i % 4 == 1 ? 1 + i : 0;
    tp[i] = i % 3 == 2 ? 0.85f : 1.0f;
    mp[i] = i % 5 == 3 ? 0.05f : 0.0f;
    seed[i] = int64_t(r.next());
    pos[i] = r.range(0, 40000);
    next[i] = r.range(0, v);
    for (int j = 0; j < 3; ++j) set(i, int(r.range(0, v)), 5.0f);  // ties at the top
  }
  if (rows > 1) t[1] = 0.0f;  // greedy: next_token stays
  if (rows > 2)
    for (int i = 0; i < v; ++i) set(2, i, std::nanf(""));  // no finite logit: stays
  const int lg = b.buf("logits", std::move(logits));
  const int nt = b.buf("next_token", pod_bytes(next), Compare::kExact);
  const int bt = b.buf("temperature", pod_bytes(t));
  const int bk = b.buf("top_k", pod_bytes(tk));
  const int bp = b.buf("top_p", pod_bytes(tp));
  const int bm = b.buf("min_p", pod_bytes(mp));
  const int bs = b.buf("seed", pod_bytes(seed));
  const int bpos = b.buf("positions", pod_bytes(pos));
  const int h = b.buf("histogram", std::vector<uint8_t>(size_t(rows) * 65536 * 4, 0));
  b.launch("sample.fatbin", "kern_sample_bf16", {uint32_t(rows), 1, 1}, 256,
           {arg_buf(lg), arg_buf(nt), arg_buf(bt), arg_buf(bk), arg_buf(bp), arg_buf(bm), arg_buf(bs), arg_buf(bpos),
            arg_buf(h), arg_i32(rows), arg_i32(v), arg_i32(rows)});
  return b.c;
}

/// The decode GEMV family (docs/kernels.md §11). a and c are rows inside
/// larger buffers (a_off / c_off elements in, strides k + pad and n + pad);
/// partial is compared too (both sides write each split's sum in the same
/// order). The counters start at zero (the kernels return them to zero;
/// test/kernels/gemv_test.cpp checks the cpu twin leaves them so).
enum class Gemv { kStore, kAcc, kResidual, kSiluMul, kNorm, kNormSiluMul };

Case gemv(Rng& r, Gemv v, int m, int n, int k, int splits, int pad, bool bench) {
  static const char* const kSymbols[] = {"kern_gemv_bf16", "kern_gemv_acc_bf16", "kern_gemv_residual_bf16",
                                         "kern_gemv_silu_mul_bf16", "kern_gemv_rmsnorm_bf16",
                                         "kern_gemv_rmsnorm_silu_mul_bf16"};
  const char* sym = kSymbols[static_cast<int>(v)];
  const bool norm = v == Gemv::kNorm || v == Gemv::kNormSiluMul;
  const bool silu = v == Gemv::kSiluMul || v == Gemv::kNormSiluMul;
  const int rows = silu ? 2 * n : n;
  const int lda = k + pad, ldc = n + pad, a_off = pad, c_off = pad;
  const double c_bytes = 2.0 * m * n * (v == Gemv::kAcc || v == Gemv::kResidual ? 2 : 1);
  Builder b{{shape(sym + 5, {{"m", m}, {"n", n}, {"k", k}, {"splits", splits}, {"pad", pad}}), {}, {},
             2.0 * rows * k + 2.0 * m * k + c_bytes, bench}};
  const int a = b.buf("a", bf16_random(r, size_t(a_off) + size_t(m) * lda, -2, 2));
  const int nw = norm ? b.buf("norm_weight", bf16_random(r, k, 0.5f, 1.5f)) : -1;
  const int w = b.buf("w", bf16_random(r, size_t(rows) * k, -1, 1));
  const int res = v == Gemv::kResidual ? b.buf("residual", bf16_random(r, size_t(m) * ldc, -4, 4)) : -1;
  const size_t c_elems = size_t(c_off) + size_t(m) * ldc;
  const int c = b.buf("c", v == Gemv::kAcc ? bf16_random(r, c_elems, -4, 4) : poison(c_elems * 2), Compare::kBf16);
  const int part = b.buf("partial", poison(size_t(splits) * m * rows * 4), splits > 1 ? Compare::kF32 : Compare::kNone);
  const int cnt = b.buf("counters", std::vector<uint8_t>(size_t((n + 7) / 8) * 4, 0));
  std::vector<CaseArg> args = {arg_buf(a, uint64_t(a_off) * 2)};
  if (norm) args.push_back(arg_buf(nw));
  args.push_back(arg_buf(w));
  if (res >= 0) args.push_back(arg_buf(res));
  for (CaseArg x : {arg_buf(c, uint64_t(c_off) * 2), arg_buf(part), arg_buf(cnt), arg_i32(m), arg_i32(n),
                    arg_i32(k), arg_i32(lda), arg_i32(ldc), arg_i32(splits)})
    args.push_back(x);
  if (norm) args.push_back(arg_f32(1e-6f));
  b.launch("gemv.fatbin", sym, {uint32_t((n + 7) / 8), uint32_t(splits), 1}, 128, args);
  if (norm) b.c.launches.back().shared_mem = uint32_t(m) * uint32_t(k) * 2;
  return b.c;
}

/// q/k norm + RoPE + KV write (docs/kernels.md §12) over fused qkv rows;
/// without `qk_norm`, rope_flags bit 1: RoPE + KV write of the raw heads (Llama).
Case qk_norm_rope_cache(Rng& r, int t, int h, int kv, int d, float k_scale, bool neox, bool bench,
                        bool qk_norm = true) {
  const std::string name =
      std::string(neox ? "qk_norm_rope_cache neox" : "qk_norm_rope_cache gptj") + (qk_norm ? "" : " no-qk-norm");
  Builder b{{shape(name.c_str(),
                   {{"T", t}, {"H", h}, {"KV", kv}, {"D", d}}),
             {}, {},
             t * (2.0 * (h + 2 * kv) * d + 2.0 * h * d + 4.0 * kv * d + 4.0 * d) + 4.0 * d, bench}};
  const Cache c{kv, d, 8};
  std::vector<int64_t> slots(size_t(c.pages) * 16);
  std::iota(slots.begin(), slots.end(), 0);
  for (size_t i = slots.size() - 1; i > 0; --i) std::swap(slots[i], slots[size_t(r.range(0, int64_t(i) + 1))]);
  slots.resize(t);
  if (t >= 2) slots[1] = -1;  // padding token: no cache write
  const int max_pos = 4096;
  std::vector<int64_t> pos(t);
  for (auto& p : pos) p = r.range(0, max_pos);
  std::vector<float> cs_rows(size_t(max_pos) * d);
  for (int p = 0; p < max_pos; ++p)
    for (int i = 0; i < d / 2; ++i) {
      const double f = p * std::pow(1e6, -2.0 * i / d);
      cs_rows[size_t(p) * d + i] = float(std::cos(f));
      cs_rows[size_t(p) * d + d / 2 + i] = float(std::sin(f));
    }
  const int stride = (h + 2 * kv) * d + 8;
  const int qkv = b.buf("qkv", bf16_random(r, size_t(t) * stride, -3, 3));
  const int qw = b.buf("q_norm_weight", bf16_random(r, d, 0.5f, 1.5f));
  const int kw = b.buf("k_norm_weight", bf16_random(r, d, 0.5f, 1.5f));
  const int ps = b.buf("positions", pod_bytes(pos));
  const int cs = b.buf("cos_sin_cache", pod_bytes(cs_rows));
  const int qo = b.buf("q_out", poison(size_t(t) * h * d * 2), Compare::kBf16);
  const int cache = b.buf("kv_cache", bf16_random(r, c.elems(), -1, 1), Compare::kBf16);
  b.pairs(qo, d, d, neox);     // [T, H, D]
  b.pairs(cache, d, d, neox);  // rows of D: the k rows rotated, the v rows copied
  const int sm = b.buf("slot_mapping", pod_bytes(slots));
  const int ks = b.buf("k_scale", pod_bytes(std::vector<float>{k_scale}));
  const int vs = b.buf("v_scale", pod_bytes(std::vector<float>{1.0f}));
  b.launch("qk_norm_rope_cache.fatbin", "kern_qk_norm_rope_cache_bf16",
           {uint32_t((h + 2 * kv + 3) / 4), uint32_t(t), 1}, 128,
           {arg_buf(qkv), arg_buf(qw), arg_buf(kw), arg_buf(ps), arg_buf(cs), arg_buf(qo),
            arg_buf(cache, c.layer1_offset_bytes()), arg_buf(sm), arg_buf(ks), arg_buf(vs), arg_i32(t), arg_i32(h),
            arg_i32(kv), arg_i32(d), arg_i32(stride), arg_i64(c.page_stride()), arg_f32(1e-6f),
            arg_u8(uint8_t((neox ? 1 : 0) | (qk_norm ? 0 : 2)))});
  return b.c;
}

/// One-launch decode attention (docs/kernels.md §13): partials compared as
/// f32; the counters start at zero. `splits`: the generator's 32 by default.
Case attention_decode_one(Rng& r, int t, int h, int kv, int d, int ctx, bool bench, int splits = 32) {
  Builder b{{shape("attention_decode_one",
                   {{"T", t}, {"H", h}, {"KV", kv}, {"D", d}, {"ctx", ctx}, {"S", splits}}), {}, {},
             4.0 * d * ctx * kv * t + 4.0 * t * h * d + 8.0 * (d + 2) * t * h * splits, bench}};
  const AttnInputs in = attn_inputs(b, r, t, h, kv, d, ctx, 1.0f);
  const int po = b.buf("partial_o", poison(size_t(t) * h * splits * d * 4), Compare::kF32);
  const int pml = b.buf("partial_ml", poison(size_t(t) * h * splits * 2 * 4), Compare::kF32);
  const int cnt = b.buf("counters", std::vector<uint8_t>(size_t(t) * kv * 4, 0));
  const int out = b.buf("out", poison(size_t(t) * h * d * 2), Compare::kBf16);
  std::vector<CaseArg> a = attn_head_args(in);
  for (CaseArg x : {arg_buf(po), arg_buf(pml), arg_buf(cnt), arg_buf(out), arg_i32(t), arg_i32(h), arg_i32(kv),
                    arg_i32(d), arg_i64(in.c.page_stride()), arg_f32(1.0f / std::sqrt(float(d))), arg_i32(splits)})
    a.push_back(x);
  b.launch("paged_attention.fatbin", "kern_attention_decode_bf16", {uint32_t(kv), uint32_t(splits), uint32_t(t)}, 128,
           a);
  return b.c;
}

/// Final norm + lm_head + argmax (kern_gemv_rmsnorm_argmax_bf16): the
/// per-tile partials, reduced into next_token by the last tile block (its
/// counter after the tile counters starts and must end at zero).
Case lm_head_argmax(Rng& r, int m, int n, int k, int splits, bool bench) {
  const int tiles = (n + 7) / 8;
  Builder b{{shape("gemv_rmsnorm_argmax", {{"m", m}, {"n", n}, {"k", k}, {"splits", splits}}), {}, {},
             2.0 * n * k + 2.0 * m * k + 2.0 * m * n + 16.0 * m * tiles + 8.0 * m, bench}};
  const int a = b.buf("a", bf16_random(r, size_t(m) * k, -2, 2));
  const int nw = b.buf("norm_weight", bf16_random(r, k, 0.5f, 1.5f));
  const int w = b.buf("w", bf16_random(r, size_t(n) * k, -1, 1));
  const int c = b.buf("logits", poison(size_t(m) * n * 2), Compare::kBf16);
  const int part = b.buf("partial", poison(size_t(splits) * m * n * 4), splits > 1 ? Compare::kF32 : Compare::kNone);
  const int cnt = b.buf("counters", std::vector<uint8_t>(size_t(tiles + 1) * 4, 0));
  // The per-tile partials may legitimately differ where two logits of a tile
  // are within a bf16 ulp of each other; the token (random data: a clear
  // maximum) must not.
  const int pv = b.buf("argmax_val", poison(size_t(m) * tiles * 4));
  const int pi = b.buf("argmax_idx", poison(size_t(m) * tiles * 4));
  const int nt = b.buf("next_token", poison(size_t(m) * 8), Compare::kExact);
  b.launch("gemv.fatbin", "kern_gemv_rmsnorm_argmax_bf16", {uint32_t(tiles), uint32_t(splits), 1}, 128,
           {arg_buf(a), arg_buf(nw), arg_buf(w), arg_buf(c), arg_buf(part), arg_buf(cnt), arg_buf(pv), arg_buf(pi),
            arg_buf(nt), arg_i32(m), arg_i32(n), arg_i32(k), arg_i32(k), arg_i32(n), arg_i32(splits), arg_f32(1e-6f)});
  b.c.launches.back().shared_mem = uint32_t(m) * uint32_t(k) * 2;
  return b.c;
}
/// The decode step advance: integer bookkeeping, compared exactly. `p0` is
/// the last row's position; a non-identity block table of `pages` pages.
Case decode_advance(Rng& r, int t, int64_t p0, int pages) {
  Builder b{{shape("decode_advance", {{"T", t}, {"p0", p0}, {"pages", pages}}), {}, {}, 64.0, false}};
  std::vector<int64_t> next(t), ids(t), pos(t), slot(t);
  for (int i = 0; i < t; ++i) {
    next[i] = r.range(0, 151936);
    ids[i] = r.range(0, 151936);
    pos[i] = p0 - (t - 1) + i;
    slot[i] = r.range(0, 1000);
  }
  std::vector<int32_t> table(pages);
  for (int i = 0; i < pages; ++i) table[i] = static_cast<int32_t>((i * 7 + 3) % pages);
  const std::vector<int32_t> seq = {static_cast<int32_t>(p0 + 1)};
  const int nt = b.buf("next_token", pod_bytes(next));
  const int bt = b.buf("block_table", pod_bytes(table));
  const int ti = b.buf("token_ids", pod_bytes(ids), Compare::kExact);
  const int ps = b.buf("positions", pod_bytes(pos), Compare::kExact);
  const int sm = b.buf("slot_mapping", pod_bytes(slot), Compare::kExact);
  const int sl = b.buf("seq_lens", pod_bytes(seq), Compare::kExact);
  b.launch("decode_advance.fatbin", "kern_decode_advance", {1, 1, 1}, 1,
           {arg_buf(nt), arg_buf(bt), arg_buf(ti), arg_buf(ps), arg_buf(sm), arg_buf(sl), arg_i32(t),
            arg_i32(pages), arg_i32(16)});
  return b.c;
}

/// The last row moved to row 0 in place (docs/kernels.md §14a): `rows` rows
/// of `row_bytes` bytes, compared exactly (a byte copy); the rows between
/// stay as they were.
Case last_row(Rng& r, int rows, int row_bytes) {
  Builder b{{shape("last_row", {{"rows", rows}, {"row_bytes", row_bytes}}), {}, {}, 2.0 * row_bytes, false}};
  std::vector<uint8_t> x(size_t(rows) * row_bytes);
  for (auto& v : x) v = static_cast<uint8_t>(r.next());
  const int xb = b.buf("x", std::move(x), Compare::kExact);
  b.launch("last_row.fatbin", "kern_last_row", {1, 1, 1}, 256, {arg_buf(xb), arg_i32(rows), arg_i32(row_bytes)});
  return b.c;
}

/// Batched decode attention (docs/kernels.md §15): one query per sequence,
/// each over its own shuffled pages of one cache (row r's length
/// ctxs[r]; 0 is a free slot), partials compared as f32.
Case attention_decode_batch(Rng& r, int h, int kv, int d, const std::vector<int32_t>& ctxs, bool bench) {
  const int splits = 16, rows = static_cast<int>(ctxs.size());
  int pages_per_seq = 1, total = 0;
  double ctx_sum = 0;
  for (int32_t n : ctxs) {
    pages_per_seq = std::max(pages_per_seq, (n + 15) / 16 + 1);
    total += (n + 15) / 16;
    ctx_sum += n;
  }
  Builder b{{shape("attention_decode_batch", {{"B", rows}, {"H", h}, {"KV", kv}, {"D", d}, {"ctx0", ctxs[0]}}), {},
             {}, 4.0 * d * ctx_sum * kv + 4.0 * rows * h * d + 8.0 * (d + 2) * rows * h * splits, bench}};
  const Cache c{kv, d, total + 2};
  std::vector<int32_t> pool(c.pages);
  std::iota(pool.begin(), pool.end(), 0);
  for (size_t i = pool.size() - 1; i > 0; --i) std::swap(pool[i], pool[size_t(r.range(0, int64_t(i) + 1))]);
  std::vector<int32_t> tables(size_t(rows) * pages_per_seq, -1);
  int next = 0;
  for (int row = 0; row < rows; ++row)
    for (int p = 0; p < (ctxs[row] + 15) / 16; ++p) tables[size_t(row) * pages_per_seq + p] = pool[next++];
  const int q = b.buf("q", bf16_random(r, size_t(rows) * h * d, -1, 1));
  const int cache = b.buf("kv_cache", bf16_random(r, c.elems(), -1, 1));
  const int bt = b.buf("block_tables", pod_bytes(tables));
  const int sl = b.buf("seq_lens", pod_bytes(ctxs));
  const int ks = b.buf("k_scale", pod_bytes(std::vector<float>{1.0f}));
  const int vs = b.buf("v_scale", pod_bytes(std::vector<float>{0.75f}));
  const int po = b.buf("partial_o", poison(size_t(rows) * h * splits * d * 4), Compare::kF32);
  const int pml = b.buf("partial_ml", poison(size_t(rows) * h * splits * 2 * 4), Compare::kF32);
  const int cnt = b.buf("counters", std::vector<uint8_t>(size_t(rows) * kv * 4, 0));
  const int out = b.buf("out", poison(size_t(rows) * h * d * 2), Compare::kBf16);
  b.launch("attention_decode_batch.fatbin", "kern_attention_decode_batch_bf16",
           {uint32_t(kv), uint32_t(splits), uint32_t(rows)}, 128,
           {arg_buf(q), arg_buf(cache, c.layer1_offset_bytes()), arg_buf(bt), arg_buf(sl), arg_buf(ks), arg_buf(vs),
            arg_buf(po), arg_buf(pml), arg_buf(cnt), arg_buf(out), arg_i32(rows), arg_i32(h), arg_i32(kv), arg_i32(d),
            arg_i64(c.page_stride()), arg_f32(1.0f / std::sqrt(float(d))), arg_i32(pages_per_seq),
            arg_i32(splits)});
  return b.c;
}

/// The decode attention that folds in q/k norm + RoPE + the KV write
/// (docs/kernels.md §13a kern_attention_decode_qkv_bf16 in paged_attention.fatbin,
/// §15a kern_attention_decode_batch_qkv_bf16 in attention_decode_batch.fatbin;
/// one ABI): raw qkv rows (padded stride), each row's shuffled pages of one
/// cache (ctxs[r]; 0 and negative are free rows), the new k / v compared in
/// the cache (rotated pairs), partials as f32, out as bf16. Without
/// `qk_norm`, rope_flags bit 1: the heads are rotated as read (Llama).
Case attention_decode_qkv(Rng& r, bool batch, int h, int kv, int d, const std::vector<int32_t>& ctxs, int splits,
                          bool neox, bool bench, bool qk_norm = true) {
  const int rows = static_cast<int>(ctxs.size());
  int pages_per_seq = 1, total = 0, max_pos = 1;
  double ctx_sum = 0;
  for (int32_t n : ctxs) {
    pages_per_seq = std::max(pages_per_seq, (n + 15) / 16 + 1);
    total += std::max(n + 15, 0) / 16;
    ctx_sum += std::max(n, 0);
    max_pos = std::max(max_pos, int(n));
  }
  const int stride = (h + 2 * kv) * d + 8;
  const std::string name =
      std::string(batch ? "attention_decode_batch_qkv" : "attention_decode_qkv") + (qk_norm ? "" : " no-qk-norm");
  Builder b{{shape(name.c_str(),
                   {{"B", rows}, {"H", h}, {"KV", kv}, {"D", d}, {"ctx0", ctxs[0]}, {"S", splits}, {"neox", neox}}),
             {}, {},
             4.0 * d * ctx_sum * kv + rows * (2.0 * stride + 4.0 * kv * d + 8.0 * d + 2.0 * h * d) +
                 8.0 * (d + 2) * rows * h * splits,
             bench}};
  const Cache c{kv, d, total + 2};
  std::vector<int32_t> pool(c.pages);
  std::iota(pool.begin(), pool.end(), 0);
  for (size_t i = pool.size() - 1; i > 0; --i) std::swap(pool[i], pool[size_t(r.range(0, int64_t(i) + 1))]);
  std::vector<int32_t> tables(size_t(rows) * pages_per_seq, -1);
  int next = 0;
  for (int row = 0; row < rows; ++row)
    for (int p = 0; p < std::max(ctxs[row] + 15, 0) / 16; ++p) tables[size_t(row) * pages_per_seq + p] = pool[next++];
  std::vector<float> cs_rows(size_t(max_pos) * d);
  for (int p = 0; p < max_pos; ++p)
    for (int i = 0; i < d / 2; ++i) {
      const double f = p * std::pow(1e6, -2.0 * i / d);
      cs_rows[size_t(p) * d + i] = float(std::cos(f));
      cs_rows[size_t(p) * d + d / 2 + i] = float(std::sin(f));
    }
  const int qkv = b.buf("qkv", bf16_random(r, size_t(rows) * stride, -3, 3));
  const int qw = b.buf("q_norm_weight", bf16_random(r, d, 0.5f, 1.5f));
  const int kw = b.buf("k_norm_weight", bf16_random(r, d, 0.5f, 1.5f));
  const int cs = b.buf("cos_sin_cache", pod_bytes(cs_rows));
  const int cache = b.buf("kv_cache", bf16_random(r, c.elems(), -1, 1), Compare::kBf16);
  b.pairs(cache, d, d, neox);  // rows of D: the new k rows rotated, the rest copied or untouched
  const int bt = b.buf("block_tables", pod_bytes(tables));
  const int sl = b.buf("seq_lens", pod_bytes(ctxs));
  const int ks = b.buf("k_scale", pod_bytes(std::vector<float>{0.8f}));
  const int vs = b.buf("v_scale", pod_bytes(std::vector<float>{1.25f}));
  const int po = b.buf("partial_o", poison(size_t(rows) * h * splits * d * 4), Compare::kF32);
  const int pml = b.buf("partial_ml", poison(size_t(rows) * h * splits * 2 * 4), Compare::kF32);
  const int cnt = b.buf("counters", std::vector<uint8_t>(size_t(rows) * kv * 4, 0));
  const int out = b.buf("out", poison(size_t(rows) * h * d * 2), Compare::kBf16);
  b.launch(batch ? "attention_decode_batch.fatbin" : "paged_attention.fatbin",
           batch ? "kern_attention_decode_batch_qkv_bf16" : "kern_attention_decode_qkv_bf16",
           {uint32_t(kv), uint32_t(splits), uint32_t(rows)}, 128,
           {arg_buf(qkv), arg_buf(qw), arg_buf(kw), arg_buf(cs), arg_buf(cache, c.layer1_offset_bytes()), arg_buf(bt),
            arg_buf(sl), arg_buf(ks), arg_buf(vs), arg_buf(po), arg_buf(pml), arg_buf(cnt), arg_buf(out),
            arg_i32(rows), arg_i32(h), arg_i32(kv), arg_i32(d), arg_i64(c.page_stride()),
            arg_f32(1.0f / std::sqrt(float(d))), arg_i32(pages_per_seq), arg_i32(splits), arg_i32(stride),
            arg_f32(1e-6f), arg_u8(uint8_t((neox ? 1 : 0) | (qk_norm ? 0 : 2)))});
  return b.c;
}

/// Batched decode advance (§16): rows crossing a page, past their table
/// row, on a -1 entry, and a free slot (left alone).
Case decode_advance_batch(Rng& r) {
  const int rows = 5, pages = 3;
  Builder b{{shape("decode_advance_batch", {{"B", rows}, {"pages", pages}}), {}, {}, 50.0 * rows, false}};
  std::vector<int64_t> next(rows), ids(rows);
  for (int i = 0; i < rows; ++i) {
    next[i] = r.range(0, 151936);
    ids[i] = r.range(0, 151936);
  }
  const std::vector<int64_t> pos = {14, 31, 47, 20, 99}, slot = {1, 2, 3, 4, -1};
  const std::vector<int32_t> lens = {15, 32, 48, 21, 0};
  const std::vector<int32_t> tables = {7, 8, 9, 2, 4, 6, 1, 3, 5, 10, -1, -1, -1, -1, -1};
  const int nt = b.buf("next_token", pod_bytes(next));
  const int bt = b.buf("block_tables", pod_bytes(tables));
  const int ti = b.buf("token_ids", pod_bytes(ids), Compare::kExact);
  const int ps = b.buf("positions", pod_bytes(pos), Compare::kExact);
  const int sm = b.buf("slot_mapping", pod_bytes(slot), Compare::kExact);
  const int sl = b.buf("seq_lens", pod_bytes(lens), Compare::kExact);
  b.launch("decode_advance_batch.fatbin", "kern_decode_advance_batch", {1, 1, 1}, 64,
           {arg_buf(nt), arg_buf(bt), arg_buf(ti), arg_buf(ps), arg_buf(sm), arg_buf(sl), arg_i32(rows),
            arg_i32(pages), arg_i32(16)});
  return b.c;
}

/// The decode GEMV cases, in table order: Qwen3-4B shapes (m = 1 timed;
/// m = 8 = speculative verify), then odd shapes: partial tiles, odd k
/// (scalar order), strided rows at offsets, several splits.
void add_gemv_cases(Rng& r, std::vector<Case>& cs) {
  cs.push_back(gemv(r, Gemv::kNorm, 1, 6144, 2560, 1, 0, true));          // input_layernorm + qkv_proj
  cs.push_back(gemv(r, Gemv::kAcc, 1, 2560, 4096, 4, 0, true));           // o_proj + residual (in place)
  cs.push_back(gemv(r, Gemv::kNormSiluMul, 1, 9728, 2560, 1, 0, true));   // post norm + gate_up + silu*mul
  cs.push_back(gemv(r, Gemv::kAcc, 1, 2560, 9728, 4, 0, true));           // down_proj + residual (in place)
  // m = 8 at Qwen3-4B k with fewer columns (the cpu reference stays quick).
  cs.push_back(gemv(r, Gemv::kNorm, 8, 1000, 2560, 1, 0, false));
  cs.push_back(gemv(r, Gemv::kResidual, 8, 640, 4096, 4, 0, false));
  cs.push_back(gemv(r, Gemv::kNormSiluMul, 8, 1216, 2560, 1, 0, false));
  cs.push_back(gemv(r, Gemv::kAcc, 8, 320, 9728, 4, 0, false));
  cs.push_back(gemv(r, Gemv::kNorm, 1, 151936, 2560, 1, 0, true));     // final norm + lm_head
  cs.push_back(gemv(r, Gemv::kStore, 1, 2560, 2560, 2, 0, true));
  cs.push_back(lm_head_argmax(r, 1, 151936, 2560, 1, true));
  cs.push_back(lm_head_argmax(r, 8, 1001, 64, 2, false));
  cs.push_back(lm_head_argmax(r, 3, 13, 37, 1, false));
  for (const Gemv v : {Gemv::kStore, Gemv::kAcc, Gemv::kResidual, Gemv::kSiluMul, Gemv::kNorm, Gemv::kNormSiluMul}) {
    cs.push_back(gemv(r, v, 1, 13, 37, 1, 3, false));
    cs.push_back(gemv(r, v, 8, 13, 37, 3, 3, false));
    cs.push_back(gemv(r, v, 8, 37, 1024, 5, 0, false));
    cs.push_back(gemv(r, v, 3, 21, 1000, 2, 8, false));
  }
}

}  // namespace

std::vector<Case> make_cases(uint64_t seed) {
  Rng r(seed);
  std::vector<Case> cs;
  // Qwen3-4B: E 2560, H 32, KV 8, D 128, I 9728, V 151,936 (bench = true).
  cs.push_back(embedding(r, 1, 2560, 1000, true));
  cs.push_back(embedding(r, 7, 64, 256, false));
  cs.push_back(embedding(r, 5, 100, 50, false));
  for (bool add : {false, true}) {
    cs.push_back(rmsnorm(r, 1, 2560, add, true));
    cs.push_back(rmsnorm(r, 512, 2560, add, true));
    cs.push_back(rmsnorm(r, 3, 64, add, false));
    cs.push_back(rmsnorm(r, 2, 8200, add, false));  // past the register cache
    cs.push_back(rmsnorm(r, 3, 100, add, false));   // scalar path
  }
  cs.push_back(head_rmsnorm(r, 1, 32, 128, 48 * 128, 0, true));
  cs.push_back(head_rmsnorm(r, 1, 8, 128, 48 * 128, 32 * 128, true));
  cs.push_back(head_rmsnorm(r, 5, 4, 16, 8 * 16, 0, false));
  cs.push_back(head_rmsnorm(r, 3, 2, 640, 2 * 640, 0, false));  // D > 512: past the lane cache
  cs.push_back(head_rmsnorm(r, 2, 3, 130, 3 * 130 + 1, 1, false));  // scalar path
  cs.push_back(rope(r, 1, 32, 8, 128, 0, true, true));
  cs.push_back(rope(r, 4, 4, 2, 16, 8, true, false));
  cs.push_back(rope(r, 3, 4, 2, 16, 0, false, false));
  cs.push_back(rope(r, 2, 3, 1, 20, 0, true, false));  // D/2 = 10: scalar path
  cs.push_back(silu(r, 1, 9728, true));
  cs.push_back(silu(r, 512, 9728, true));
  cs.push_back(silu(r, 3, 128, false));
  cs.push_back(bias_add(r, 1, 2560 + 2 * 512, 2560 + 2 * 512, false));  // Qwen2.5-3B's qkv row at decode
  cs.push_back(bias_add(r, 5, 96, 100, false));                         // strided rows, the tiny Qwen2
  cs.push_back(silu(r, 2, 100, false));
  // Qwen3-30B-A3B's sparse MLP at decode (E 2048, I 768, top-8; 8 experts stand for its 128: a step reads
  // the 8 selected ones either way), then odd shapes: 5 and 6 experts, top-1 and top-2, rows of a batch.
  cs.push_back(moe(r, 1, 8, 2048, 768, 8, true, true));
  cs.push_back(moe(r, 3, 5, 64, 32, 2, true, false));
  cs.push_back(moe(r, 8, 6, 37, 13, 1, false, false));
  cs.push_back(moe(r, 2, 6, 100, 20, 2, false, false));
  cs.push_back(reshape_and_cache(r, 1, 8, 128, 1.0f, true));
  cs.push_back(reshape_and_cache(r, 6, 2, 16, 0.7f, false));
  cs.push_back(reshape_and_cache(r, 4, 2, 20, 1.0f, false));
  cs.push_back(attention_decode(r, 1, 32, 8, 128, 1024, 1.0f, true));
  cs.push_back(attention_decode(r, 1, 4, 2, 16, 37, 1.0f, false));
  cs.push_back(attention_decode(r, 2, 4, 2, 64, 5, 0.5f, false));  // ctx < splits: empty splits
  cs.push_back(attention_decode(r, 1, 2, 1, 96, 100, 1.0f, false));  // strided lanes
  cs.push_back(attention_decode(r, 1, 4, 4, 256, 300, 1.0f, false));
  cs.push_back(attention_prefill(r, 512, 32, 8, 128, 512, true));
  cs.push_back(attention_prefill(r, 5, 4, 2, 16, 21, false));
  cs.push_back(attention_prefill(r, 3, 4, 4, 64, 3, false));
  cs.push_back(attention_prefill(r, 8, 32, 8, 128, 300, false, true));  // the 4B draft block over its context
  cs.push_back(attention_prefill(r, 5, 4, 2, 16, 21, false, true));
  cs.push_back(argmax(r, 1, 151936, false, true));
  cs.push_back(argmax(r, 3, 1000, true, false));
  cs.push_back(argmax(r, 2, 50, true, false));  // V < 64: empty chunks
  cs.push_back(sample(r, 1, 151936, true));
  cs.push_back(sample(r, 6, 1000, false));
  cs.push_back(sample(r, 3, 37, false));
  cs.push_back(attention_decode_one(r, 1, 32, 8, 128, 1024, true));
  cs.push_back(attention_decode_one(r, 8, 32, 8, 128, 1024, false));  // speculative verify rows
  cs.push_back(attention_decode_one(r, 1, 4, 2, 16, 37, false));
  cs.push_back(attention_decode_one(r, 1, 8, 2, 128, 300, false, 16));  // the first pass's 16 splits
  cs.push_back(attention_decode_one(r, 1, 4, 2, 128, 200, false, 64));  // the most splits; 0.6B's group of 2
  cs.push_back(attention_decode_one(r, 2, 4, 2, 64, 5, false));  // ctx < splits: empty splits
  cs.push_back(attention_decode_one(r, 1, 2, 1, 96, 100, false));  // strided lanes
  cs.push_back(attention_decode_one(r, 3, 8, 1, 256, 300, false));
  cs.push_back(qk_norm_rope_cache(r, 1, 32, 8, 128, 1.0f, true, true));
  cs.push_back(qk_norm_rope_cache(r, 8, 32, 8, 128, 1.0f, true, false));
  cs.push_back(qk_norm_rope_cache(r, 3, 4, 2, 64, 0.7f, false, false));
  cs.push_back(qk_norm_rope_cache(r, 2, 3, 1, 10, 1.0f, true, false));  // D/2 odd
  cs.push_back(qk_norm_rope_cache(r, 8, 32, 8, 64, 1.0f, true, false, false));  // no q/k norm: Llama-3.2-1B prefill
  cs.push_back(qk_norm_rope_cache(r, 3, 3, 3, 32, 0.7f, true, false, false));   // no q/k norm: the tiny Llama, MHA
  add_gemv_cases(r, cs);
  cs.push_back(decode_advance(r, 1, 15, 8));   // crosses a page: slot through the table
  cs.push_back(decode_advance(r, 3, 40, 8));   // the last of 3 rows feeds row 0
  cs.push_back(decode_advance(r, 1, 127, 8));  // past the table: slot -1
  cs.push_back(last_row(r, 32, 1024 * 2));     // prefill_last's residual row, the 0.6B at a 32-token chunk
  cs.push_back(last_row(r, 5, 8));             // its positions row (i64)
  cs.push_back(last_row(r, 3, 6));             // a row of bytes not a multiple of 4
  cs.push_back(last_row(r, 2, 64));            // two rows: the smallest move (one row moves nothing: last_row_test)
  cs.push_back(attention_decode_batch(r, 32, 8, 128, {512, 512, 512, 512}, true));  // the 4B geometry, 4 sequences
  cs.push_back(attention_decode_batch(r, 4, 2, 16, {37, 1, 0, 100, 16}, false));  // a free slot, empty splits
  cs.push_back(attention_decode_batch(r, 8, 1, 64, {5, 300, 17}, false));
  cs.push_back(attention_decode_batch(r, 2, 1, 96, {100, 33}, false));   // strided lanes
  cs.push_back(attention_decode_batch(r, 4, 4, 256, {300, 64}, false));
  cs.push_back(decode_advance_batch(r));
  cs.push_back(attention_decode_qkv(r, false, 32, 8, 128, {1024}, 32, true, true));  // the 4B decode step
  cs.push_back(attention_decode_qkv(r, false, 4, 2, 16, {37}, 32, true, false));     // the tiny models' shape
  cs.push_back(attention_decode_qkv(r, false, 8, 2, 128, {300}, 16, false, false));   // interleaved pairs
  cs.push_back(attention_decode_qkv(r, false, 4, 2, 64, {5, 0, 17}, 32, true, false));  // rows, a free one, empty splits
  cs.push_back(attention_decode_qkv(r, false, 2, 1, 96, {100}, 64, true, false));    // strided lanes, the most splits
  cs.push_back(attention_decode_qkv(r, false, 3, 1, 10, {1}, 32, true, false));      // D/2 odd, the first position
  cs.push_back(attention_decode_qkv(r, true, 32, 8, 128, {512, 512, 512, 512}, 16, true, true));  // the 4B batch
  cs.push_back(attention_decode_qkv(r, true, 4, 2, 16, {37, 1, 0, 100, -2, 16}, 16, true, false));  // free rows
  cs.push_back(attention_decode_qkv(r, true, 8, 1, 64, {5, 300, 17}, 16, false, false));
  // No q/k norm (rope_flags bit 1, Llama): Llama-3.2-1B's decode step and batch, the tiny Llama's 3 heads.
  cs.push_back(attention_decode_qkv(r, false, 32, 8, 64, {300}, 32, true, false, false));
  cs.push_back(attention_decode_qkv(r, true, 32, 8, 64, {37, 0, 100}, 32, true, false, false));
  cs.push_back(attention_decode_qkv(r, false, 3, 3, 32, {17}, 32, true, false, false));
  cs.push_back(attention_decode_qkv(r, true, 2, 1, 96, {100, 33}, 16, true, false));  // strided lanes
  cs.push_back(attention_decode_qkv(r, true, 4, 4, 256, {300, 64}, 16, true, false));
  return cs;
}

}  // namespace kern::gpu_test
