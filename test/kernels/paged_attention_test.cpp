// Paged attention (docs/kernels.md §8) against naive causal attention over a
// dense K/V kept in the test (double precision): the test scatters K/V into a
// poisoned, layer-interleaved paged cache through a shuffled block table, so
// a read of the wrong page, layer, slot or kv head, or past the causal limit
// in the last page, turns the output into NaN or into a different value.
//
// f32 error bound per output element (u = 2^-24): scores s_j = scale * q.k_j
// err by at most D_s = (D + 4) u scale |q|.|k_j| (a D-term dot product and
// the scale products); exp(s_j - m) adds u |s_j - m| + 2 u relatively; the
// normalised weights then err by at most twice the weights' relative error,
// and the n-term sums of l and o add (n + 2) u each. With the split merge of
// decode (S exp factors, sums of S terms) that stays below
//   e = (4 max_j D_s + 4 u max_j |s_j - m| + (2 n + 64) u) * sum_j p_j |v_j|.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

struct AttnCase {
  int tokens, heads, kv_heads, dim, ctx;
  int layers = 1, layer = 0;
  float k_scale = 1.0f, v_scale = 1.0f;
};

/// A filled cache plus the dense K/V (logical values, scales applied) it holds.
struct AttnData {
  AttnCase c;
  std::vector<uint16_t> cache;        // [pages][layers][16][KV][2][D], poison elsewhere
  std::vector<int32_t> block_table;   // logical page -> physical page (shuffled)
  std::vector<uint16_t> q;            // [T, H * D]
  std::vector<double> k, v;           // dense [ctx][KV][D]
  int64_t page_stride = 0, layer_base = 0;
  int32_t seq_len = 0;
  int32_t cu[2] = {0, 0};
};

AttnData make_data(const AttnCase& c, std::mt19937& rng) {
  AttnData d;
  d.c = c;
  const int used = (c.ctx + 15) / 16, physical = used + 3;
  d.page_stride = static_cast<int64_t>(c.layers) * 16 * c.kv_heads * 2 * c.dim;
  d.layer_base = static_cast<int64_t>(c.layer) * 16 * c.kv_heads * 2 * c.dim;
  d.cache.assign(static_cast<size_t>(physical * d.page_stride), kPoison);
  std::vector<int32_t> pages(physical);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  d.block_table.assign(pages.begin(), pages.begin() + used);
  d.block_table.push_back(-1);  // entries past the context are never read
  const size_t dense = static_cast<size_t>(c.ctx) * c.kv_heads * c.dim;
  const auto ks = random_bf16(rng, dense), vs = random_bf16(rng, dense);
  d.k.resize(dense);
  d.v.resize(dense);
  for (int p = 0; p < c.ctx; ++p) {
    for (int h = 0; h < c.kv_heads; ++h) {
      // Written with the layout formula of docs/kernels.md, independently of the kernels.
      const int64_t at = static_cast<int64_t>(d.block_table[p / 16]) * d.page_stride +
                         d.layer_base + ((p % 16) * c.kv_heads + h) * 2 * c.dim;
      for (int j = 0; j < c.dim; ++j) {
        const size_t i = (static_cast<size_t>(p) * c.kv_heads + h) * c.dim + j;
        d.cache[at + j] = ks[i];
        d.cache[at + c.dim + j] = vs[i];
        d.k[i] = bf(ks[i]) * c.k_scale;
        d.v[i] = bf(vs[i]) * c.v_scale;
      }
    }
  }
  d.q = random_bf16(rng, static_cast<size_t>(c.tokens) * c.heads * c.dim);
  d.seq_len = c.ctx;
  d.cu[1] = c.tokens;
  return d;
}

double softmax_scale(const AttnCase& c) { return 1.0 / std::sqrt(static_cast<double>(c.dim)); }

/// Naive causal attention of query i, head h over the dense K/V: the scaled
/// scores of positions [0, n) (for split tests) and out/err of the head.
struct HeadRef {
  std::vector<double> scores, out, err;
};

HeadRef naive_head(const AttnData& d, int i, int h, bool causal = true) {
  const AttnCase& c = d.c;
  const int n = causal ? c.ctx - c.tokens + i + 1 : c.ctx, kvh = h / (c.heads / c.kv_heads);
  const double scale = softmax_scale(c);
  HeadRef r;
  r.scores.resize(n);
  double score_err = 0.0;
  for (int p = 0; p < n; ++p) {
    double dot = 0.0, mag = 0.0;
    for (int j = 0; j < c.dim; ++j) {
      const double qj = bf(d.q[(i * c.heads + h) * c.dim + j]);
      const double kj = d.k[(static_cast<size_t>(p) * c.kv_heads + kvh) * c.dim + j];
      dot += qj * kj;
      mag += std::abs(qj * kj);
    }
    r.scores[p] = scale * dot;
    score_err = std::max(score_err, (c.dim + 4) * kU * scale * mag);
  }
  const double m = *std::max_element(r.scores.begin(), r.scores.end());
  double l = 0.0, spread = 0.0;
  for (double s : r.scores) {
    l += std::exp(s - m);
    spread = std::max(spread, std::abs(s - m));
  }
  const double rel = 4 * score_err + 4 * kU * spread + (2.0 * n + 64) * kU;
  r.out.assign(c.dim, 0.0);
  r.err.assign(c.dim, 0.0);
  for (int p = 0; p < n; ++p) {
    const double w = std::exp(r.scores[p] - m) / l;
    for (int j = 0; j < c.dim; ++j) {
      const double vj = d.v[(static_cast<size_t>(p) * c.kv_heads + kvh) * c.dim + j];
      r.out[j] += w * vj;
      r.err[j] += rel * w * std::abs(vj);
    }
  }
  return r;
}

/// Checks a kernel output [T, H * D] against the naive reference (causal,
/// or every query over the whole context).
void check_against_naive(const AttnData& d, const std::vector<uint16_t>& out, bool causal = true) {
  std::vector<double> ref, err;
  for (int i = 0; i < d.c.tokens; ++i) {
    for (int h = 0; h < d.c.heads; ++h) {
      const HeadRef r = naive_head(d, i, h, causal);
      ref.insert(ref.end(), r.out.begin(), r.out.end());
      err.insert(err.end(), r.err.begin(), r.err.end());
    }
  }
  check_bf16(out, ref, err);
}

/// Appends interface params 0..6 (q .. v_scale) to `a`.
void add_inputs(ArgPack& a, const AttnData& d, const float* ks, const float* vs) {
  a.add(d.q.data()).add(d.cache.data() + d.layer_base).add(d.block_table.data());
  a.add(&d.seq_len).add(&d.cu[0]).add(ks).add(vs);
}

/// Appends interface params 8..13 (num_tokens .. scale) to `a`.
void add_scalars(ArgPack& a, const AttnData& d) {
  a.add<int32_t>(d.c.tokens).add<int32_t>(d.c.heads).add<int32_t>(d.c.kv_heads);
  a.add<int32_t>(d.c.dim).add<int64_t>(d.page_stride);
  a.add(static_cast<float>(softmax_scale(d.c)));
}

/// The one-step kernels: prefill, or the non-causal draft attention (same ABI).
std::vector<uint16_t> run_prefill(const AttnData& d, const char* symbol = "kern_paged_attention_prefill_bf16") {
  std::vector<uint16_t> out(d.q.size(), kPoison);
  ArgPack a;
  add_inputs(a, d, &d.c.k_scale, &d.c.v_scale);
  a.add(out.data());
  add_scalars(a, d);
  launch_ok(symbol, a, d.c.heads, d.c.tokens);
  return out;
}

/// The decode implementation: partial (grid [H, S, T]) then reduce (grid [H, T]).
struct DecodeRun {
  std::vector<float> partial_o, partial_ml;
  std::vector<uint16_t> out;
};

DecodeRun run_decode(const AttnData& d) {
  const AttnCase& c = d.c;
  DecodeRun r;
  r.partial_o.assign(static_cast<size_t>(c.tokens) * c.heads * kSplits * c.dim, kNanF);
  r.partial_ml.assign(static_cast<size_t>(c.tokens) * c.heads * kSplits * 2, kNanF);
  r.out.assign(d.q.size(), kPoison);
  ArgPack p;
  add_inputs(p, d, &c.k_scale, &c.v_scale);
  p.add(r.partial_o.data()).add(r.partial_ml.data());
  add_scalars(p, d);
  p.add<int32_t>(kSplits);
  launch_ok("kern_paged_attention_partial_bf16", p, c.heads, kSplits, c.tokens);
  ArgPack q;
  q.add(r.partial_o.data()).add(r.partial_ml.data()).add(r.out.data());
  q.add<int32_t>(c.tokens).add<int32_t>(c.heads).add<int32_t>(c.dim).add<int32_t>(kSplits);
  launch_ok("kern_paged_attention_reduce_bf16", q, c.heads, c.tokens);
  return r;
}

}  // namespace

TEST_CASE("paged prefill attention matches naive causal attention over the dense K/V",
          "[kernels][attention]") {
  std::mt19937 rng(61);
  for (const AttnCase& c : {AttnCase{1, 4, 2, 16, 17},
                            AttnCase{5, 4, 1, 32, 33, 3, 1, 0.5f, 2.0f},
                            AttnCase{17, 2, 2, 8, 17, 2, 1},
                            AttnCase{3, 8, 2, 64, 40, 1, 0, 1.5f, 0.25f},
                            AttnCase{16, 4, 4, 128, 48}}) {
    INFO("T " << c.tokens << " H " << c.heads << " KV " << c.kv_heads << " D " << c.dim
              << " ctx " << c.ctx);
    const AttnData d = make_data(c, rng);
    check_against_naive(d, run_prefill(d));
  }
}

TEST_CASE("non-causal paged attention: every query attends to the whole context and block",
          "[kernels][attention]") {
  std::mt19937 rng(65);
  // The draft's shape (a block of queries at the end of the context), GQA,
  // scales, a page boundary inside the block, and one query.
  for (const AttnCase& c : {AttnCase{8, 4, 2, 16, 8}, AttnCase{8, 4, 1, 32, 40, 3, 1, 0.5f, 2.0f},
                            AttnCase{4, 8, 2, 64, 18, 2, 0}, AttnCase{1, 2, 2, 8, 5}}) {
    INFO("T " << c.tokens << " H " << c.heads << " KV " << c.kv_heads << " D " << c.dim << " ctx " << c.ctx);
    const AttnData d = make_data(c, rng);
    const auto out = run_prefill(d, "kern_paged_attention_noncausal_bf16");
    check_against_naive(d, out, false);
    // Teeth: with more than one query the causal reference differs (query 0
    // of the causal kernel sees only its prefix).
    if (c.tokens > 1) {
      const auto causal = run_prefill(d);
      CHECK(causal != out);
      CHECK(std::equal(out.end() - c.heads * c.dim, out.end(), causal.end() - c.heads * c.dim));  // last query: same range
    }
  }
}

TEST_CASE("paged decode attention (split-KV partial + reduce) matches naive attention",
          "[kernels][attention]") {
  std::mt19937 rng(62);
  // Context lengths: one position, fewer than the 16 splits, exactly one
  // page, crossing a page boundary (17, 33), many pages; then 3 queries.
  for (const AttnCase& c : {AttnCase{1, 4, 2, 16, 1}, AttnCase{1, 4, 2, 16, 5},
                            AttnCase{1, 4, 1, 16, 16, 2, 0}, AttnCase{1, 4, 2, 32, 17, 3, 2},
                            AttnCase{1, 8, 2, 64, 33, 2, 1, 0.5f, 2.0f},
                            AttnCase{1, 2, 1, 128, 100}, AttnCase{3, 4, 2, 16, 20, 2, 1}}) {
    INFO("T " << c.tokens << " H " << c.heads << " KV " << c.kv_heads << " D " << c.dim
              << " ctx " << c.ctx);
    const AttnData d = make_data(c, rng);
    check_against_naive(d, run_decode(d).out);
  }
}

TEST_CASE("paged decode and prefill attention agree on a single query", "[kernels][attention]") {
  std::mt19937 rng(63);
  for (const int ctx : {1, 5, 17, 33, 70}) {
    const AttnData d = make_data(AttnCase{1, 4, 2, 64, ctx, 2, 1, 0.5f, 1.0f}, rng);
    const auto decode = run_decode(d).out, prefill = run_prefill(d);
    for (size_t i = 0; i < decode.size(); ++i) {
      // Same math, different association: at most one bf16 ulp apart.
      const double a = bf(decode[i]), b = bf(prefill[i]);
      const double ulp = std::ldexp(std::max(std::abs(a), std::abs(b)), -7);
      INFO("ctx " << ctx << " element " << i << ": decode " << a << ", prefill " << b);
      REQUIRE(std::abs(a - b) <= ulp);
    }
  }
}

TEST_CASE("paged decode partial covers [s*L, min((s+1)*L, n)) per split and empties the rest",
          "[kernels][attention]") {
  std::mt19937 rng(64);
  // n = 33: L = 3, splits 0..10 hold 3 positions, 11..15 are empty.
  // n = 5: L = 1, splits 0..4 hold 1 position, 5..15 are empty.
  // n = 32: L = 2 exactly (a multiple of 16); n = 100: L = 7, split 15 empty.
  for (const int ctx : {33, 5, 32, 100}) {
    const AttnCase c{1, 2, 1, 16, ctx};
    const AttnData d = make_data(c, rng);
    const DecodeRun r = run_decode(d);
    const int len = (ctx + kSplits - 1) / kSplits;
    for (int h = 0; h < c.heads; ++h) {
      const HeadRef ref = naive_head(d, 0, h);
      for (int s = 0; s < kSplits; ++s) {
        INFO("ctx " << ctx << " head " << h << " split " << s);
        const float* ml = &r.partial_ml[(h * kSplits + s) * 2];
        const float* o = &r.partial_o[(h * kSplits + s) * c.dim];
        const int begin = s * len, end = std::min((s + 1) * len, ctx);
        if (begin >= end) {
          CHECK(ml[0] == -std::numeric_limits<float>::infinity());
          CHECK(ml[1] == 0.0f);
          for (int j = 0; j < c.dim; ++j) REQUIRE(o[j] == 0.0f);
          continue;
        }
        const double m = *std::max_element(ref.scores.begin() + begin, ref.scores.begin() + end);
        double l = 0.0;
        for (int p = begin; p < end; ++p) l += std::exp(ref.scores[p] - m);
        CHECK(std::abs(ml[0] - m) <= 1e-5 * (1 + std::abs(m)));
        CHECK(std::abs(ml[1] - l) <= 1e-5 * l);
      }
    }
  }
}

namespace {

/// kern_attention_decode_bf16 (docs/kernels.md §13): one launch, grid
/// [KV, S, T], with the same partials as the two-step decode.
DecodeRun run_decode_one_launch(const AttnData& d, std::vector<int32_t>& counters) {
  const AttnCase& c = d.c;
  DecodeRun r;
  r.partial_o.assign(static_cast<size_t>(c.tokens) * c.heads * kSplits * c.dim, kNanF);
  r.partial_ml.assign(static_cast<size_t>(c.tokens) * c.heads * kSplits * 2, kNanF);
  r.out.assign(d.q.size(), kPoison);
  counters.assign(static_cast<size_t>(c.tokens) * c.kv_heads, 0);
  ArgPack p;
  add_inputs(p, d, &c.k_scale, &c.v_scale);
  p.add(r.partial_o.data()).add(r.partial_ml.data()).add(counters.data()).add(r.out.data());
  add_scalars(p, d);
  p.add<int32_t>(kSplits);
  launch_ok("kern_attention_decode_bf16", p, c.kv_heads, kSplits, c.tokens);
  return r;
}

}  // namespace

TEST_CASE("one-launch decode attention matches naive attention and the two-step decode exactly",
          "[kernels][attention]") {
  std::mt19937 rng(65);
  for (const AttnCase& c : {AttnCase{1, 4, 2, 16, 1}, AttnCase{1, 8, 2, 64, 33, 2, 1, 0.5f, 2.0f},
                            AttnCase{1, 2, 1, 128, 100}, AttnCase{8, 4, 2, 16, 20, 2, 1},
                            AttnCase{8, 32, 8, 128, 70}}) {
    INFO("T " << c.tokens << " H " << c.heads << " KV " << c.kv_heads << " D " << c.dim << " ctx " << c.ctx);
    const AttnData d = make_data(c, rng);
    std::vector<int32_t> counters;
    const DecodeRun one = run_decode_one_launch(d, counters);
    check_against_naive(d, one.out);
    const DecodeRun two = run_decode(d);
    CHECK(one.out == two.out);
    CHECK(std::equal(one.partial_ml.begin(), one.partial_ml.end(), two.partial_ml.begin()));
    for (const int32_t x : counters) CHECK(x == 0);
  }
}

TEST_CASE("one-launch decode attention gives each of 8 query rows the bits it has alone",
          "[kernels][attention]") {
  // Row i of a T = 8 call attends causally to n_i = ctx - 8 + i + 1
  // positions; alone (T = 1) with seq_lens = n_i and the same q row, it must
  // produce the same bf16 output, bit for bit (speculative verify == decode).
  std::mt19937 rng(66);
  const AttnCase c{8, 8, 2, 64, 45, 2, 1};
  const AttnData all = make_data(c, rng);
  std::vector<int32_t> counters;
  const DecodeRun r8 = run_decode_one_launch(all, counters);
  for (int i = 0; i < c.tokens; ++i) {
    AttnData one = all;
    one.c.tokens = 1;
    one.c.ctx = c.ctx - c.tokens + i + 1;
    one.seq_len = one.c.ctx;
    one.cu[1] = 1;
    const size_t row = static_cast<size_t>(c.heads) * c.dim;
    one.q.assign(all.q.begin() + i * row, all.q.begin() + (i + 1) * row);
    const DecodeRun r1 = run_decode_one_launch(one, counters);
    INFO("row " << i);
    CHECK(std::equal(r1.out.begin(), r1.out.end(), r8.out.begin() + i * row));
  }
}

TEST_CASE("one-launch decode attention rejects more than 8 query heads per kv head and a grid.y other than the splits",
          "[kernels][attention]") {
  std::mt19937 rng(67);
  const AttnData d = make_data(AttnCase{1, 16, 1, 16, 5}, rng);
  std::vector<float> po(16 * kSplits * 16), pml(16 * kSplits * 2);
  std::vector<int32_t> counters(1);
  std::vector<uint16_t> out(16 * 16);
  ArgPack p;
  add_inputs(p, d, &d.c.k_scale, &d.c.v_scale);
  p.add(po.data()).add(pml.data()).add(counters.data()).add(out.data());
  add_scalars(p, d);
  p.add<int32_t>(kSplits);
  kern::Status s = launch("kern_attention_decode_bf16", p, 1, kSplits, 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("is 16; must be <= 8 query heads per kv head") != std::string::npos);
  const AttnData d2 = make_data(AttnCase{1, 4, 1, 16, 5}, rng);
  ArgPack q;
  add_inputs(q, d2, &d2.c.k_scale, &d2.c.v_scale);
  q.add(po.data()).add(pml.data()).add(counters.data()).add(out.data());
  add_scalars(q, d2);
  q.add<int32_t>(kSplits);
  s = launch("kern_attention_decode_bf16", q, 1, 4, 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("grid.y is 4; must equal param 17 (num_splits) = 16") != std::string::npos);
}

TEST_CASE("one-launch decode attention rejects more than 8 query rows (its scratch is sized for 8)",
          "[kernels][attention]") {
  std::mt19937 rng(71);
  const AttnData d = make_data(AttnCase{9, 2, 1, 16, 20}, rng);
  std::vector<float> po(9 * 2 * kSplits * 16), pml(9 * 2 * kSplits * 2);
  std::vector<int32_t> counters(9);
  std::vector<uint16_t> out(9 * 2 * 16);
  ArgPack p;
  add_inputs(p, d, &d.c.k_scale, &d.c.v_scale);
  p.add(po.data()).add(pml.data()).add(counters.data()).add(out.data());
  add_scalars(p, d);
  p.add<int32_t>(kSplits);
  const kern::Status s = launch("kern_attention_decode_bf16", p, 1, kSplits, 9);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("param 11 (num_tokens) is 9; must be <= 8") != std::string::npos);
}

TEST_CASE("one-launch decode attention rejects more than 64 splits (the merge keeps the split weights in shared memory)",
          "[kernels][attention]") {
  std::mt19937 rng(73);
  const AttnData d = make_data(AttnCase{1, 2, 1, 16, 100}, rng);
  constexpr int kMany = 65;
  std::vector<float> po(2 * kMany * 16), pml(2 * kMany * 2);
  std::vector<int32_t> counters(1);
  std::vector<uint16_t> out(2 * 16);
  ArgPack p;
  add_inputs(p, d, &d.c.k_scale, &d.c.v_scale);
  p.add(po.data()).add(pml.data()).add(counters.data()).add(out.data());
  add_scalars(p, d);
  p.add<int32_t>(kMany);
  kern::Status s = launch("kern_attention_decode_bf16", p, 1, kMany, 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("param 17 (num_splits) is 65; must be <= 64") != std::string::npos);
  // 64 splits (100 positions: some splits hold 1 position, none is empty) still run.
  constexpr int kMax = 64;
  std::vector<float> po2(2 * kMax * 16), pml2(2 * kMax * 2);
  ArgPack q;
  add_inputs(q, d, &d.c.k_scale, &d.c.v_scale);
  q.add(po2.data()).add(pml2.data()).add(counters.data()).add(out.data());
  add_scalars(q, d);
  q.add<int32_t>(kMax);
  s = launch("kern_attention_decode_bf16", q, 1, kMax, 1);
  CHECK(s.ok());
}

TEST_CASE("paged prefill attention at a prefill's size (blocks over the cores): each query row has the bits it has alone",
          "[kernels][attention]") {
  // 32 queries x 16 heads x 64 positions x D 128: large enough to run on every core.
  std::mt19937 rng(67);
  const AttnData d = make_data(AttnCase{32, 16, 8, 128, 64}, rng);
  const std::vector<uint16_t> out = run_prefill(d);
  check_against_naive(d, out);
  const size_t row = static_cast<size_t>(d.c.heads) * d.c.dim;
  for (int i : {0, 13, 31}) {
    INFO("query " << i);
    // Query i alone: one token whose context ends at its position.
    AttnData one = d;
    one.c.tokens = 1;
    one.q.assign(d.q.begin() + static_cast<ptrdiff_t>(i * row), d.q.begin() + static_cast<ptrdiff_t>((i + 1) * row));
    one.seq_len = d.c.ctx - d.c.tokens + i + 1;
    one.cu[1] = 1;
    const std::vector<uint16_t> alone = run_prefill(one);
    CHECK(std::equal(alone.begin(), alone.end(), out.begin() + static_cast<ptrdiff_t>(i * row)));
  }
}
