// The tensor-parallel built-ins (docs/parallel.md, docs/kernels.md §10a):
// the split-K GEMMs against the product in double, the invariance argument
// itself (ranks' f32 partials of their k slices, added in the all-reduce's
// rank tree, give the one-rank bits exactly), and the all-reduce's order on
// an in-process fake world. f32 bound of a k-term dot split into slices
// summed as a tree: e = (k + 2) u sum_x |a_x w_x| (each term passes through
// at most k + 2 additions), as for extern:cublaslt_bf16_tn.
#include <cstring>
#include <vector>

#include "kernels-src/cpu/collective.h"
#include "kernels-src/cpu/kernels.h"
#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

/// A world seen from one rank: the other ranks' contributions are fixed in
/// advance (`peers[r]`, r != rank), as if they had run the same launch.
class FakeWorld final : public kern::cpu::Collective {
 public:
  FakeWorld(uint32_t rank, std::vector<std::vector<float>> peers) : rank_(rank), peers_(std::move(peers)) {}
  uint32_t rank() const override { return rank_; }
  uint32_t world() const override { return static_cast<uint32_t>(peers_.size()); }
  kern::Status all_gather(const void* in, void* out, size_t size_bytes) override {
    ++calls;
    for (uint32_t r = 0; r < world(); ++r)
      std::memcpy(static_cast<char*>(out) + r * size_bytes, r == rank_ ? in : peers_[r].data(), size_bytes);
    return {};
  }
  kern::Status barrier(uint32_t) override { return {}; }
  int calls = 0;

 private:
  uint32_t rank_;
  std::vector<std::vector<float>> peers_;
};

kern::Status run_with(std::string_view symbol, const ArgPack& args, kern::cpu::Collective* c) {
  const kern::cpu::CpuKernel* k = kern::cpu::find_cpu_kernel(symbol);
  REQUIRE(k != nullptr);
  kern::cpu::CpuLaunch l;
  l.args = args.data();
  l.num_args = args.size();
  l.collective = c;
  return k->run(l);
}

/// The rank's k columns [r * k / tp, (r + 1) * k / tp) of a row-major [rows, k] matrix.
std::vector<uint16_t> k_slice(const std::vector<uint16_t>& x, int rows, int k, int tp, int r) {
  const int kl = k / tp;
  std::vector<uint16_t> out(static_cast<size_t>(rows) * kl);
  for (int i = 0; i < rows; ++i)
    std::memcpy(&out[static_cast<size_t>(i) * kl], &x[static_cast<size_t>(i) * k + r * kl], kl * sizeof(uint16_t));
  return out;
}

}  // namespace

TEST_CASE("the split-K GEMM equals the product in double within the f32 dot bound", "[kernels][parallel]") {
  std::mt19937 rng(42);
  for (auto [m, n, k, splits] : {std::tuple{1, 7, 64, 8}, {5, 13, 200, 8}, {3, 9, 24, 1}, {17, 33, 96, 4}}) {
    const auto a = random_bf16(rng, static_cast<size_t>(m) * k);
    const auto w = random_bf16(rng, static_cast<size_t>(n) * k);
    std::vector<uint16_t> c(static_cast<size_t>(m) * n, kPoison);
    ArgPack args;
    args.add(a.data()).add(w.data()).add(c.data()).add<int32_t>(m).add<int32_t>(n).add<int32_t>(k).add<int32_t>(splits);
    launch_ok("extern:gemm_bf16_tn_splitk", args, 1);
    std::vector<double> ref(c.size()), err(c.size());
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double dot = 0.0, mag = 0.0;
        for (int x = 0; x < k; ++x) {
          const double p = bf(a[static_cast<size_t>(i) * k + x]) * bf(w[static_cast<size_t>(j) * k + x]);
          dot += p;
          mag += std::abs(p);
        }
        ref[static_cast<size_t>(i) * n + j] = dot;
        err[static_cast<size_t>(i) * n + j] = (k + 2) * kU * mag;
      }
    INFO("m " << m << " n " << n << " k " << k << " splits " << splits);
    check_bf16(c, ref, err);
  }
}

TEST_CASE("ranks' f32 partials of their k slices, all-reduced in rank order, give the one-rank bits",
          "[kernels][parallel]") {
  // The invariance argument (docs/parallel.md): TP = 1 with 8 slices versus
  // TP = 2 and 4, each rank running the f32 variant on its k columns with
  // 8 / tp slices, then extern:allreduce_sum_f32_bf16 on rank 0's view.
  std::mt19937 rng(7);
  const int m = 3, n = 11, k = 96, splits = 8;
  // Magnitudes spread over many binades make f32 additions order-sensitive.
  auto a = random_bf16(rng, static_cast<size_t>(m) * k, -64.0f, 64.0f);
  const auto w = random_bf16(rng, static_cast<size_t>(n) * k);
  for (size_t i = 0; i < a.size(); i += 5) a[i] = kern::f32_to_bf16(kern::bf16_to_f32(a[i]) * 1e-3f);
  std::vector<uint16_t> one(static_cast<size_t>(m) * n);
  std::vector<float> one_f32(one.size());  // the same sum before its rounding
  {
    ArgPack args;
    args.add(a.data()).add(w.data()).add(one.data()).add<int32_t>(m).add<int32_t>(n).add<int32_t>(k).add<int32_t>(splits);
    launch_ok("extern:gemm_bf16_tn_splitk", args, 1);
    args.set(2, one_f32.data());
    launch_ok("extern:gemm_bf16_tn_splitk_f32", args, 1);
  }
  // The order matters here: a sequential sum of the slices gives other bits for some element.
  int differs_from_sequential = 0;
  for (int tp : {2, 4, 8}) {
    std::vector<std::vector<float>> partial(tp, std::vector<float>(static_cast<size_t>(m) * n));
    for (int r = 0; r < tp; ++r) {
      const auto ar = k_slice(a, m, k, tp, r), wr = k_slice(w, n, k, tp, r);
      ArgPack args;
      args.add(ar.data()).add(wr.data()).add(partial[r].data()).add<int32_t>(m).add<int32_t>(n).add<int32_t>(k / tp)
          .add<int32_t>(splits / tp);
      launch_ok("extern:gemm_bf16_tn_splitk_f32", args, 1);
    }
    for (uint32_t rank : {0u, static_cast<uint32_t>(tp - 1)}) {
      FakeWorld world(rank, partial);
      std::vector<float> x = partial[rank];
      std::vector<uint16_t> y(x.size(), kPoison);
      ArgPack args;
      args.add(x.data()).add(y.data()).add<int32_t>(m * n);
      const kern::Status s = run_with("extern:allreduce_sum_f32_bf16", args, &world);
      INFO((s.ok() ? "" : s.error().message));
      REQUIRE(s.ok());
      CHECK(world.calls == 1);
      INFO("tp " << tp << " rank " << rank);
      CHECK(y == one);
      CHECK(std::memcmp(x.data(), one_f32.data(), x.size() * sizeof(float)) == 0);  // f32 bits too
    }
    if (tp == 8)
      for (size_t e = 0; e < one.size(); ++e) {
        float seq = 0.0f;
        for (int r = 0; r < tp; ++r) seq += partial[r][e];
        differs_from_sequential += seq != one_f32[e];
      }
  }
  CHECK(differs_from_sequential > 0);
}

TEST_CASE("the all-reduce adds the ranks as a pairwise tree in rank order, in place", "[kernels][parallel]") {
  // Ranks hold 2^24, 1, 1, -2^24: the tree (2^24 + 1) + (1 - 2^24) is
  // 2^24 + -16777215 = 1, a left-to-right sum loses both ones and gives 0.
  const float big = 16777216.0f;
  std::vector<std::vector<float>> ranks = {{big}, {1.0f}, {1.0f}, {-big}};
  FakeWorld world(2, ranks);
  std::vector<float> x = ranks[2];
  ArgPack args;
  args.add(x.data()).add<int32_t>(1);
  REQUIRE(run_with("extern:allreduce_sum_f32", args, &world).ok());
  const float tree = (big + 1.0f) + (1.0f + -big);
  const float sequential = ((big + 1.0f) + 1.0f) + -big;
  REQUIRE(tree != sequential);
  CHECK(x[0] == tree);
  CHECK(kern::cpu::tree_sum_f32(std::vector<float>{1, 2, 3}.data(), 3, 1) == (1.0f + 2.0f) + 3.0f);
}

TEST_CASE("an all-reduce on a device of one rank is an error naming the op", "[kernels][parallel]") {
  std::vector<float> x(4, 1.0f);
  ArgPack args;
  args.add(x.data()).add<int32_t>(4);
  const kern::Status s = run_with("extern:allreduce_sum_f32", args, nullptr);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.rfind("extern:allreduce_sum_f32: ", 0) == 0);
  CHECK(s.error().message.find("--tp") != std::string::npos);
}

TEST_CASE("the split-K GEMM refuses splits that are not a power of two or do not divide k", "[kernels][parallel]") {
  std::vector<uint16_t> a(24), w(24), c(1);
  for (auto [k, splits, needle] : {std::tuple{24, 3, "power of two"}, {20, 8, "multiple of splits"}}) {
    ArgPack args;
    args.add(a.data()).add(w.data()).add(c.data()).add<int32_t>(1).add<int32_t>(1).add<int32_t>(k).add<int32_t>(splits);
    const kern::Status s = launch("extern:gemm_bf16_tn_splitk", args, 1);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message.find(needle) != std::string::npos);
  }
}
