// kern_embedding_bf16 (docs/kernels.md §1): exact row gather; ids outside
// [0, vocab) give a zero row.
#include <tuple>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

/// Runs the kernel over `ids` with a table [vocab, hidden]; out is poisoned first.
std::vector<uint16_t> embed(const std::vector<int64_t>& ids, const std::vector<uint16_t>& table,
                            int32_t hidden, int32_t vocab) {
  std::vector<uint16_t> out(ids.size() * hidden, kPoison);
  ArgPack a;
  a.add(ids.data()).add(table.data()).add(out.data());
  a.add<int32_t>(static_cast<int32_t>(ids.size())).add<int32_t>(hidden).add<int32_t>(vocab);
  launch_ok("kern_embedding_bf16", a, static_cast<uint32_t>(ids.size()));
  return out;
}

}  // namespace

TEST_CASE("embedding copies the table row of each token id", "[kernels][embedding]") {
  std::mt19937 rng(11);
  for (const auto& [vocab, hidden, tokens] :
       std::vector<std::tuple<int, int, int>>{{7, 5, 3}, {100, 64, 9}, {33, 130, 17}}) {
    const auto table = random_bf16(rng, static_cast<size_t>(vocab) * hidden);
    std::vector<int64_t> ids(tokens);
    for (auto& id : ids) id = std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng);
    const auto out = embed(ids, table, hidden, vocab);
    for (int t = 0; t < tokens; ++t) {
      for (int j = 0; j < hidden; ++j) {
        REQUIRE(out[t * hidden + j] == table[ids[t] * hidden + j]);
      }
    }
  }
}

TEST_CASE("embedding writes a zero row for an id outside [0, vocab)", "[kernels][embedding]") {
  std::mt19937 rng(12);
  const int32_t vocab = 10, hidden = 37;
  const auto table = random_bf16(rng, vocab * hidden, 0.5f, 1.5f);  // no zeros in the table
  const std::vector<int64_t> ids = {3, -1, 9, 10, 0, int64_t{1} << 40, INT64_MIN};
  const auto out = embed(ids, table, hidden, vocab);
  for (size_t t = 0; t < ids.size(); ++t) {
    const bool in_range = ids[t] >= 0 && ids[t] < vocab;
    for (int j = 0; j < hidden; ++j) {
      INFO("token " << t << " id " << ids[t]);
      REQUIRE(out[t * hidden + j] == (in_range ? table[ids[t] * hidden + j] : uint16_t{0}));
    }
  }
}
