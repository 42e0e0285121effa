// kern_rope_bf16 (docs/kernels.md §5) against the rotation written in double
// on the same f32 cos/sin cache. f32 error bound of x1 c - x2 s: two rounded
// products and a rounded difference, e = 3 u (|x1 c| + |x2 s|) (u = 2^-24);
// the difference may cancel, so the bound is absolute, not relative to ref.
#include <cmath>
#include <tuple>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

struct RopeCase {
  int tokens, q_heads, k_heads, dim, max_pos;
};

/// cos_sin_cache [max_pos, dim]: row p = cos(p w_i) | sin(p w_i), w_i = theta^(-2i/dim).
std::vector<float> make_cache(int max_pos, int dim, double theta = 10000.0) {
  std::vector<float> c(static_cast<size_t>(max_pos) * dim);
  for (int p = 0; p < max_pos; ++p) {
    for (int i = 0; i < dim / 2; ++i) {
      const double angle = p * std::pow(theta, -2.0 * i / dim);
      c[p * dim + i] = static_cast<float>(std::cos(angle));
      c[p * dim + dim / 2 + i] = static_cast<float>(std::sin(angle));
    }
  }
  return c;
}

/// Rotates `heads` heads of a row in double into ref/err (same layout as row).
void rotate_ref(const uint16_t* row, int heads, int dim, const float* cs, bool neox, double* ref,
                double* err) {
  const int half = dim / 2;
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < half; ++i) {
      const int i1 = h * dim + (neox ? i : 2 * i), i2 = h * dim + (neox ? i + half : 2 * i + 1);
      const double x1 = bf(row[i1]), x2 = bf(row[i2]), c = cs[i], s = cs[half + i];
      ref[i1] = x1 * c - x2 * s;
      ref[i2] = x2 * c + x1 * s;
      err[i1] = err[i2] = 3 * kU * (std::abs(x1 * c) + std::abs(x2 * s) + std::abs(x1 * s) +
                                    std::abs(x2 * c));
    }
  }
}

/// Runs the kernel in place on copies of q and k; returns them.
std::pair<std::vector<uint16_t>, std::vector<uint16_t>> run_rope(
    const RopeCase& rc, const std::vector<int64_t>& pos, std::vector<uint16_t> q,
    std::vector<uint16_t> k, const std::vector<float>& cache, int q_stride, int k_stride,
    uint8_t neox) {
  ArgPack a;
  a.add(pos.data()).add(q.data()).add(k.data()).add(cache.data());
  a.add<int32_t>(rc.tokens).add<int32_t>(rc.q_heads).add<int32_t>(rc.k_heads).add<int32_t>(rc.dim);
  a.add<int32_t>(q_stride).add<int32_t>(k_stride).add<uint8_t>(neox);
  launch_ok("kern_rope_bf16", a, rc.tokens);
  return {std::move(q), std::move(k)};
}

}  // namespace

TEST_CASE("rope rotates neox and interleaved pairs of q and k by the cached angles",
          "[kernels][rope]") {
  std::mt19937 rng(41);
  for (const RopeCase rc : {RopeCase{1, 2, 1, 8, 16}, RopeCase{4, 4, 2, 16, 64},
                            RopeCase{3, 8, 2, 128, 4096}}) {
    // Token rows carry 3 padding elements after the heads; they must stay untouched.
    const int q_stride = rc.q_heads * rc.dim + 3, k_stride = rc.k_heads * rc.dim + 3;
    const auto cache = make_cache(rc.max_pos, rc.dim);
    std::vector<int64_t> pos(rc.tokens);
    for (auto& p : pos) p = std::uniform_int_distribution<int64_t>(0, rc.max_pos - 1)(rng);
    auto q = random_bf16(rng, static_cast<size_t>(rc.tokens) * q_stride);
    auto k = random_bf16(rng, static_cast<size_t>(rc.tokens) * k_stride);
    for (int t = 0; t < rc.tokens; ++t) {
      for (int p = 0; p < 3; ++p) q[t * q_stride + q_stride - 1 - p] = kPoison;
      for (int p = 0; p < 3; ++p) k[t * k_stride + k_stride - 1 - p] = kPoison;
    }
    for (const uint8_t neox : {uint8_t{1}, uint8_t{0}}) {
      INFO("is_neox " << int(neox) << ", tokens " << rc.tokens << ", head_dim " << rc.dim);
      const auto [qo, ko] = run_rope(rc, pos, q, k, cache, q_stride, k_stride, neox);
      std::vector<uint16_t> out;
      std::vector<double> ref, err;
      for (int t = 0; t < rc.tokens; ++t) {
        const float* cs = cache.data() + pos[t] * rc.dim;
        for (const auto& [in, res, heads, stride] :
             {std::tuple{&q, &qo, rc.q_heads, q_stride}, std::tuple{&k, &ko, rc.k_heads, k_stride}}) {
          std::vector<double> r(heads * rc.dim), e(heads * rc.dim);
          rotate_ref(in->data() + t * stride, heads, rc.dim, cs, neox == 1, r.data(), e.data());
          out.insert(out.end(), res->begin() + t * stride, res->begin() + t * stride + heads * rc.dim);
          ref.insert(ref.end(), r.begin(), r.end());
          err.insert(err.end(), e.begin(), e.end());
          for (int p = heads * rc.dim; p < stride; ++p) REQUIRE((*res)[t * stride + p] == kPoison);
        }
      }
      check_bf16(out, ref, err);
    }
  }
}

TEST_CASE("rope neox and interleaved modes give different results", "[kernels][rope]") {
  // The oracle tests flip the mode to show their comparison has teeth; here
  // the two pairings must disagree on most elements of a generic input.
  std::mt19937 rng(42);
  const RopeCase rc{2, 2, 2, 32, 128};
  const auto cache = make_cache(rc.max_pos, rc.dim);
  const std::vector<int64_t> pos = {5, 77};
  const auto q = random_bf16(rng, 2 * 2 * 32), k = random_bf16(rng, 2 * 2 * 32);
  const auto [q_neox, k_neox] = run_rope(rc, pos, q, k, cache, 64, 64, 1);
  const auto [q_gptj, k_gptj] = run_rope(rc, pos, q, k, cache, 64, 64, 0);
  size_t differ = 0;
  for (size_t i = 0; i < q.size(); ++i) differ += (q_neox[i] != q_gptj[i]) + (k_neox[i] != k_gptj[i]);
  CHECK(differ > q.size());  // more than half of the 2 * q.size() elements
}
