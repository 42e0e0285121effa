// Two-pass argmax (docs/kernels.md §9): against a naive scan of each row
// (largest value, smallest index on ties, NaN skipped); the chunk partials;
// and the geometry rule num_chunks == grid.x.
#include <cmath>
#include <limits>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

constexpr int kChunks = 64;
constexpr uint16_t kNanBits = 0x7fc0;
constexpr uint16_t kNegInfBits = 0xff80;

struct ArgmaxRun {
  std::vector<float> val;
  std::vector<int32_t> idx;
  std::vector<int64_t> next;
};

ArgmaxRun run_argmax(const std::vector<uint16_t>& logits, int rows, int vocab) {
  ArgmaxRun r;
  r.val.assign(static_cast<size_t>(rows) * kChunks, std::numeric_limits<float>::quiet_NaN());
  r.idx.assign(r.val.size(), -5);
  r.next.assign(rows, -5);
  ArgPack p;
  p.add(logits.data()).add(r.val.data()).add(r.idx.data());
  p.add<int32_t>(rows).add<int32_t>(vocab).add<int32_t>(kChunks);
  launch_ok("kern_argmax_partial_bf16", p, kChunks, rows, 1, 256);
  ArgPack q;
  q.add(r.val.data()).add(r.idx.data()).add(r.next.data()).add<int32_t>(rows).add<int32_t>(kChunks);
  launch_ok("kern_argmax_reduce", q, rows, 1, 1, 64);
  return r;
}

/// Naive argmax of one row: first index of the largest non-NaN value.
int64_t naive_argmax(const uint16_t* row, int vocab) {
  int64_t best = -1;
  for (int j = 0; j < vocab; ++j) {
    if (std::isnan(bf(row[j]))) continue;
    if (best < 0 || bf(row[j]) > bf(row[best])) best = j;
  }
  return best;
}

}  // namespace

TEST_CASE("argmax picks the largest logit of each row", "[kernels][argmax]") {
  std::mt19937 rng(71);
  // vocab below, at, and well above the chunk count; not multiples of 64.
  for (const auto& [rows, vocab] : std::vector<std::pair<int, int>>{{1, 5}, {2, 64}, {3, 1000},
                                                                    {2, 151936}}) {
    // Few distinct values, so ties across chunks are common.
    auto logits = random_bf16(rng, static_cast<size_t>(rows) * vocab, -4.0f, 4.0f);
    for (auto& x : logits) x = kern::f32_to_bf16(std::round(kern::bf16_to_f32(x)));
    const ArgmaxRun r = run_argmax(logits, rows, vocab);
    for (int row = 0; row < rows; ++row) {
      INFO("rows " << rows << " vocab " << vocab << " row " << row);
      REQUIRE(r.next[row] == naive_argmax(&logits[static_cast<size_t>(row) * vocab], vocab));
    }
  }
}

TEST_CASE("argmax breaks ties toward the smallest index, across chunks", "[kernels][argmax]") {
  const int vocab = 1000;  // L = 16: index 5 in chunk 0, 900 in chunk 56
  std::vector<uint16_t> logits(vocab, kern::f32_to_bf16(-1.0f));
  logits[900] = logits[5] = logits[6] = kern::f32_to_bf16(3.0f);
  CHECK(run_argmax(logits, 1, vocab).next[0] == 5);
  logits[5] = logits[6] = kern::f32_to_bf16(-1.0f);
  logits[901] = kern::f32_to_bf16(3.0f);
  CHECK(run_argmax(logits, 1, vocab).next[0] == 900);
}

TEST_CASE("argmax never picks a NaN logit", "[kernels][argmax]") {
  const int vocab = 300;
  std::vector<uint16_t> logits(vocab, kern::f32_to_bf16(0.5f));
  logits[0] = kNanBits;
  logits[7] = kern::f32_to_bf16(2.0f);
  logits[8] = kNanBits;
  logits[299] = 0xffc0;  // negative NaN
  CHECK(run_argmax(logits, 1, vocab).next[0] == 7);
  // A whole chunk of NaN (chunk 0 = [0, 5)) is as good as empty.
  std::fill(logits.begin(), logits.begin() + 5, kNanBits);
  const ArgmaxRun r = run_argmax(logits, 1, vocab);
  CHECK(r.val[0] == -std::numeric_limits<float>::infinity());
  CHECK(r.idx[0] == std::numeric_limits<int32_t>::max());
  CHECK(r.next[0] == 7);
}

TEST_CASE("argmax partial writes (-inf, INT32_MAX) for an empty chunk", "[kernels][argmax]") {
  // vocab 5 < 64 chunks: L = 1, chunks 5..63 are empty.
  const std::vector<uint16_t> logits = {kNegInfBits, kNegInfBits, kNegInfBits, kNegInfBits,
                                        kNegInfBits};
  const ArgmaxRun r = run_argmax(logits, 1, 5);
  for (int c = 0; c < 5; ++c) {
    CHECK(r.val[c] == -std::numeric_limits<float>::infinity());
    CHECK(r.idx[c] == c);  // a -inf logit still beats an empty chunk
  }
  for (int c = 5; c < kChunks; ++c) {
    CHECK(r.val[c] == -std::numeric_limits<float>::infinity());
    CHECK(r.idx[c] == std::numeric_limits<int32_t>::max());
  }
  CHECK(r.next[0] == 0);
}

TEST_CASE("argmax partial rejects a chunk count different from grid.x", "[kernels][argmax]") {
  const std::vector<uint16_t> logits(100, 0);
  std::vector<float> val(128);
  std::vector<int32_t> idx(128);
  ArgPack p;
  p.add(logits.data()).add(val.data()).add(idx.data()).add<int32_t>(1).add<int32_t>(100);
  p.add<int32_t>(64);
  const kern::Status s = launch("kern_argmax_partial_bf16", p, 32, 1, 1, 256);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("kern_argmax_partial_bf16") == 0);
  CHECK(s.error().message.find("num_chunks") != std::string::npos);
  CHECK(launch("kern_argmax_partial_bf16", p, 64, 1, 1, 256).ok());
}
