// kern_attention_decode_batch_bf16 (docs/kernels.md §15) against naive
// attention in double precision, one sequence per row: the test gives each
// sequence its own shuffled pages of one poisoned, layer-interleaved paged
// cache, so a row that reads another row's table, page or length (or past
// its own length) gets NaN or a different value. The error bound is the one
// of paged_attention_test.cpp (the same splits and merge):
//   e = (4 max_j D_s + 4 u max_j |s_j - m| + (2 n + 64) u) * sum_j p_j |v_j|.
// Batch invariance: each row's bits equal the single-sequence
// kern_attention_decode_bf16 at one query over the same sequence.
// kern_decode_advance_batch (§16): exact integer bookkeeping per row.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

/// B sequences over one cache: row r has ctx[r] positions (0: a free slot).
struct Batch {
  int heads = 4, kv_heads = 2, dim = 16, layers = 2, layer = 1, pages_per_seq = 0;
  float k_scale = 1.0f, v_scale = 1.0f;
  std::vector<int32_t> ctx;            // seq_lens [B]
  std::vector<uint16_t> cache;         // [pages][layers][16][KV][2][D], poison elsewhere
  std::vector<int32_t> tables;         // [B, pages_per_seq], -1 padded
  std::vector<uint16_t> q;             // [B, H * D]
  std::vector<std::vector<double>> k, v;  // per row: dense [ctx][KV][D]
  int64_t page_stride = 0, layer_base = 0;
  int rows() const { return static_cast<int>(ctx.size()); }
};

Batch make_batch(std::vector<int32_t> ctx, int heads, int kv_heads, int dim, std::mt19937& rng) {
  Batch b;
  b.heads = heads;
  b.kv_heads = kv_heads;
  b.dim = dim;
  b.ctx = std::move(ctx);
  int total = 0;
  for (int32_t n : b.ctx) {
    b.pages_per_seq = std::max(b.pages_per_seq, (n + 15) / 16 + 1);
    total += (n + 15) / 16;
  }
  const int physical = total + 3;
  b.page_stride = static_cast<int64_t>(b.layers) * 16 * kv_heads * 2 * dim;
  b.layer_base = static_cast<int64_t>(b.layer) * 16 * kv_heads * 2 * dim;
  b.cache.assign(static_cast<size_t>(physical * b.page_stride), kPoison);
  std::vector<int32_t> pages(physical);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  b.tables.assign(static_cast<size_t>(b.rows()) * b.pages_per_seq, -1);
  int next = 0;
  b.k.resize(b.rows());
  b.v.resize(b.rows());
  for (int r = 0; r < b.rows(); ++r) {
    const int n = b.ctx[r];
    for (int p = 0; p < (n + 15) / 16; ++p) b.tables[r * b.pages_per_seq + p] = pages[next++];
    const size_t dense = static_cast<size_t>(n) * kv_heads * dim;
    const auto ks = random_bf16(rng, dense), vs = random_bf16(rng, dense);
    b.k[r].resize(dense);
    b.v[r].resize(dense);
    for (int p = 0; p < n; ++p) {
      for (int h = 0; h < kv_heads; ++h) {
        const int64_t at = static_cast<int64_t>(b.tables[r * b.pages_per_seq + p / 16]) * b.page_stride +
                           b.layer_base + ((p % 16) * kv_heads + h) * 2 * dim;
        for (int j = 0; j < dim; ++j) {
          const size_t i = (static_cast<size_t>(p) * kv_heads + h) * dim + j;
          b.cache[at + j] = ks[i];
          b.cache[at + dim + j] = vs[i];
          b.k[r][i] = bf(ks[i]);
          b.v[r][i] = bf(vs[i]);
        }
      }
    }
  }
  b.q = random_bf16(rng, static_cast<size_t>(b.rows()) * heads * dim);
  return b;
}

double softmax_scale(const Batch& b) { return 1.0 / std::sqrt(static_cast<double>(b.dim)); }

/// Naive attention of row r, head h over the row's whole context (zeros for
/// an empty one), with the bound e above per element.
void naive_row_head(const Batch& b, int r, int h, std::vector<double>& out, std::vector<double>& err) {
  const int n = b.ctx[r], kvh = h / (b.heads / b.kv_heads);
  out.assign(b.dim, 0.0);
  err.assign(b.dim, 0.0);
  if (n <= 0) return;
  const double scale = softmax_scale(b);
  std::vector<double> scores(n);
  double score_err = 0.0;
  for (int p = 0; p < n; ++p) {
    double dot = 0.0, mag = 0.0;
    for (int j = 0; j < b.dim; ++j) {
      const double qj = bf(b.q[(r * b.heads + h) * b.dim + j]);
      const double kj = b.k[r][(static_cast<size_t>(p) * b.kv_heads + kvh) * b.dim + j] * b.k_scale;
      dot += qj * kj;
      mag += std::abs(qj * kj);
    }
    scores[p] = scale * dot;
    score_err = std::max(score_err, (b.dim + 4) * kU * scale * mag);
  }
  const double m = *std::max_element(scores.begin(), scores.end());
  double l = 0.0, spread = 0.0;
  for (double s : scores) {
    l += std::exp(s - m);
    spread = std::max(spread, std::abs(s - m));
  }
  const double rel = 4 * score_err + 4 * kU * spread + (2.0 * n + 64) * kU;
  for (int p = 0; p < n; ++p) {
    const double w = std::exp(scores[p] - m) / l;
    for (int j = 0; j < b.dim; ++j) {
      const double vj = b.v[r][(static_cast<size_t>(p) * b.kv_heads + kvh) * b.dim + j] * b.v_scale;
      out[j] += w * vj;
      err[j] += rel * w * std::abs(vj);
    }
  }
}

/// The params of one batched launch over `b` (grid [KV, S, B]).
struct BatchRun {
  std::vector<float> partial_o, partial_ml;
  std::vector<int32_t> counters;
  std::vector<uint16_t> out;
  ArgPack args;
};

void pack(const Batch& b, BatchRun& run, int rows) {
  run.partial_o.assign(static_cast<size_t>(std::max(rows, 1)) * b.heads * kSplits * b.dim, kNanF);
  run.partial_ml.assign(static_cast<size_t>(std::max(rows, 1)) * b.heads * kSplits * 2, kNanF);
  run.counters.assign(static_cast<size_t>(std::max(rows, 1)) * b.kv_heads, 0);
  run.out.assign(static_cast<size_t>(std::max(rows, 1)) * b.heads * b.dim, kPoison);
  run.args.add(b.q.data()).add(b.cache.data() + b.layer_base).add(b.tables.data()).add(b.ctx.data());
  run.args.add(&b.k_scale).add(&b.v_scale);
  run.args.add(run.partial_o.data()).add(run.partial_ml.data()).add(run.counters.data()).add(run.out.data());
  run.args.add<int32_t>(rows).add<int32_t>(b.heads).add<int32_t>(b.kv_heads).add<int32_t>(b.dim);
  run.args.add<int64_t>(b.page_stride).add(static_cast<float>(softmax_scale(b)));
  run.args.add<int32_t>(b.pages_per_seq).add<int32_t>(kSplits);
}

std::vector<uint16_t> run_batch(const Batch& b) {
  BatchRun run;
  pack(b, run, b.rows());
  launch_ok("kern_attention_decode_batch_bf16", run.args, b.kv_heads, kSplits, b.rows());
  for (const int32_t x : run.counters) CHECK(x == 0);
  return run.out;
}

/// Row r alone through the single-sequence kern_attention_decode_bf16 (one
/// query at position ctx - 1, row r's block table and q).
std::vector<uint16_t> run_single(const Batch& b, int r) {
  const size_t row = static_cast<size_t>(b.heads) * b.dim;
  std::vector<uint16_t> q(b.q.begin() + r * row, b.q.begin() + (r + 1) * row);
  std::vector<int32_t> table(b.tables.begin() + r * b.pages_per_seq, b.tables.begin() + (r + 1) * b.pages_per_seq);
  int32_t seq_len = b.ctx[r];
  int32_t cu[2] = {0, 1};
  std::vector<float> po(row * kSplits, kNanF), pml(static_cast<size_t>(b.heads) * kSplits * 2, kNanF);
  std::vector<int32_t> counters(b.kv_heads, 0);
  std::vector<uint16_t> out(row, kPoison);
  ArgPack a;
  a.add(q.data()).add(b.cache.data() + b.layer_base).add(table.data()).add(&seq_len).add(&cu[0]);
  a.add(&b.k_scale).add(&b.v_scale).add(po.data()).add(pml.data()).add(counters.data()).add(out.data());
  a.add<int32_t>(1).add<int32_t>(b.heads).add<int32_t>(b.kv_heads).add<int32_t>(b.dim);
  a.add<int64_t>(b.page_stride).add(static_cast<float>(softmax_scale(b))).add<int32_t>(kSplits);
  launch_ok("kern_attention_decode_bf16", a, b.kv_heads, kSplits, 1);
  return out;
}

}  // namespace

TEST_CASE("batched decode attention gives each row naive attention over its own sequence",
          "[kernels][attention][batch]") {
  std::mt19937 rng(271);
  struct Geo {
    int heads, kv_heads, dim;
  };
  for (const Geo g : {Geo{4, 2, 16}, Geo{8, 1, 64}, Geo{2, 2, 128}, Geo{4, 4, 96}}) {
    INFO("H " << g.heads << " KV " << g.kv_heads << " D " << g.dim);
    Batch b = make_batch({37, 1, 0, 100, 16, 5}, g.heads, g.kv_heads, g.dim, rng);
    b.k_scale = 0.5f;
    b.v_scale = 2.0f;
    const std::vector<uint16_t> out = run_batch(b);
    std::vector<double> ref, err, o, e;
    for (int r = 0; r < b.rows(); ++r) {
      for (int h = 0; h < b.heads; ++h) {
        naive_row_head(b, r, h, o, e);
        ref.insert(ref.end(), o.begin(), o.end());
        err.insert(err.end(), e.begin(), e.end());
      }
    }
    check_bf16(out, ref, err);
  }
}

TEST_CASE("batched decode attention gives each row the bits of the single-sequence decode, whatever the batch",
          "[kernels][attention][batch]") {
  std::mt19937 rng(272);
  const Batch all = make_batch({45, 3, 130, 17, 64, 1, 90, 33}, 8, 2, 64, rng);
  const std::vector<uint16_t> out8 = run_batch(all);
  const size_t row = static_cast<size_t>(all.heads) * all.dim;
  for (int r = 0; r < all.rows(); ++r) {
    INFO("row " << r);
    const std::vector<uint16_t> alone = run_single(all, r);
    CHECK(std::equal(alone.begin(), alone.end(), out8.begin() + r * row));
    // The same sequence as the only row of a batch of 1.
    Batch one = all;
    one.ctx = {all.ctx[r]};
    one.tables.assign(all.tables.begin() + r * all.pages_per_seq, all.tables.begin() + (r + 1) * all.pages_per_seq);
    one.q.assign(all.q.begin() + r * row, all.q.begin() + (r + 1) * row);
    const std::vector<uint16_t> out1 = run_batch(one);
    CHECK(out1 == alone);
  }
}

TEST_CASE("batched decode attention rejects more than 8 rows, a padded page inside a length and a length past the table",
          "[kernels][attention][batch]") {
  std::mt19937 rng(273);
  {
    const Batch b = make_batch({5, 5, 5, 5, 5, 5, 5, 5, 5}, 2, 1, 16, rng);
    BatchRun run;
    pack(b, run, 9);
    const kern::Status s = launch("kern_attention_decode_batch_bf16", run.args, 1, kSplits, 9);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message.find("param 10 (num_seqs) is 9; must be <= 8") != std::string::npos);
  }
  {
    Batch b = make_batch({20, 40}, 2, 1, 16, rng);
    b.tables[1 * b.pages_per_seq + 1] = -1;  // row 1's second page, inside its 40 positions
    BatchRun run;
    pack(b, run, 2);
    const kern::Status s = launch("kern_attention_decode_batch_bf16", run.args, 1, kSplits, 2);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message.find("block_tables[1, 1] is -1; must be >= 0 (seq_lens[1] = 40 uses it)") !=
          std::string::npos);
  }
  {
    Batch b = make_batch({20}, 2, 1, 16, rng);
    b.ctx[0] = 16 * b.pages_per_seq + 1;
    BatchRun run;
    pack(b, run, 1);
    const kern::Status s = launch("kern_attention_decode_batch_bf16", run.args, 1, kSplits, 1);
    REQUIRE_FALSE(s.ok());
    const std::string want = "seq_lens[0] is " + std::to_string(16 * b.pages_per_seq + 1) + "; must be <= " +
                             std::to_string(16 * b.pages_per_seq);
    CHECK(s.error().message.find(want) != std::string::npos);
  }
  {
    const Batch b = make_batch({20}, 2, 1, 16, rng);
    BatchRun run;
    pack(b, run, 1);
    const kern::Status s = launch("kern_attention_decode_batch_bf16", run.args, 1, 4, 1);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message.find("grid.y is 4; must equal param 17 (num_splits) = 16") != std::string::npos);
  }
}

TEST_CASE("batched decode advance feeds each row its own token, position and slot and leaves free slots alone",
          "[kernels][decode_advance][batch]") {
  // Row 0: position 14 -> 15 in page 0; row 1: a free slot; row 2: 31 -> 32,
  // the first position of its third page; row 3: 47 -> 48, past its 3-page row.
  const int32_t pages = 3;
  std::vector<int64_t> next = {101, 102, 103, 104};
  std::vector<int32_t> tables = {7, 8, 9, /*free*/ -1, -1, -1, 2, 4, 6, 1, 3, 5};
  std::vector<int64_t> ids = {1, 2, 3, 4}, pos = {14, 99, 31, 47}, slots = {0, -1, 0, 0};
  std::vector<int32_t> lens = {15, 0, 32, 48};
  ArgPack a;
  a.add(next.data()).add(tables.data()).add(ids.data()).add(pos.data()).add(slots.data()).add(lens.data());
  a.add<int32_t>(4).add<int32_t>(pages).add<int32_t>(16);
  launch_ok("kern_decode_advance_batch", a, 1, 1, 1, 64);
  CHECK(ids == std::vector<int64_t>{101, 2, 103, 104});
  CHECK(pos == std::vector<int64_t>{15, 99, 32, 48});
  CHECK(slots == std::vector<int64_t>{7 * 16 + 15, -1, 6 * 16 + 0, -1});
  CHECK(lens == std::vector<int32_t>{16, 0, 33, 49});
  // A padded (-1) entry gives slot -1, never a negative page times 16 plus an offset.
  tables[2] = -1;
  pos[0] = 31;
  launch_ok("kern_decode_advance_batch", a, 1, 1, 1, 64);
  CHECK(slots[0] == -1);
  CHECK(pos[0] == 32);
  // A grid that does not cover the rows is refused.
  ArgPack wide;
  wide.add(next.data()).add(tables.data()).add(ids.data()).add(pos.data()).add(slots.data()).add(lens.data());
  wide.add<int32_t>(65).add<int32_t>(pages).add<int32_t>(16);
  const kern::Status s = launch("kern_decode_advance_batch", wide, 1, 1, 1, 64);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("grid.x is 1; must be >= 2") != std::string::npos);
}
