// The decode GEMV family (docs/kernels.md §11) against double-precision
// formulas: every variant at m = 1 and m = 8, odd n and k, strided rows
// inside larger ("fused") buffers, one split and several; plus the promises
// the CUDA twin shares: a row does not depend on m (bit for bit), the split
// sums are merged in order, and nothing outside c's rows is written.
// f32 error bound of a k-term dot (u = 2^-24): e = (k + 2) u sum |a_x w_x|.
#include <tuple>
#include <utility>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

enum class V { kStore, kAcc, kResidual, kSiluMul, kNorm, kNormSiluMul };

const char* symbol(V v) {
  switch (v) {
    case V::kStore: return "kern_gemv_bf16";
    case V::kAcc: return "kern_gemv_acc_bf16";
    case V::kResidual: return "kern_gemv_residual_bf16";
    case V::kSiluMul: return "kern_gemv_silu_mul_bf16";
    case V::kNorm: return "kern_gemv_rmsnorm_bf16";
    case V::kNormSiluMul: return "kern_gemv_rmsnorm_silu_mul_bf16";
  }
  return "";
}
bool is_norm(V v) { return v == V::kNorm || v == V::kNormSiluMul; }
bool is_silu(V v) { return v == V::kSiluMul || v == V::kNormSiluMul; }

/// One problem's buffers. a and c are rows inside larger buffers (offsets
/// and strides as in a fused qkv / gate_up buffer); w is [rows, k].
struct Case {
  V v;
  int m, n, k, lda, ldc, splits;
  size_t a_off = 3, c_off = 5;
  std::vector<uint16_t> a, nw, w, gate, up, residual, c, c_in;
  std::vector<float> partial;
  std::vector<int32_t> counters;

  Case(V v_, int m_, int n_, int k_, int splits_, std::mt19937& rng)
      : v(v_), m(m_), n(n_), k(k_), lda(k_ + 9), ldc(n_ + 4), splits(splits_) {
    a = random_bf16(rng, a_off + static_cast<size_t>(m) * lda + 8);
    nw = random_bf16(rng, static_cast<size_t>(k), 0.5f, 1.5f);
    if (is_silu(v)) {
      gate = random_bf16(rng, static_cast<size_t>(n) * k);
      up = random_bf16(rng, static_cast<size_t>(n) * k);
      w = gate;
      w.insert(w.end(), up.begin(), up.end());  // [gate; up], the fused gate_up_proj
    } else {
      w = random_bf16(rng, static_cast<size_t>(n) * k);
    }
    residual = random_bf16(rng, static_cast<size_t>(m) * ldc, -8.0f, 8.0f);
    c = v == V::kAcc ? random_bf16(rng, c_off + static_cast<size_t>(m) * ldc + 8, -8.0f, 8.0f)
                     : std::vector<uint16_t>(c_off + static_cast<size_t>(m) * ldc + 8, kPoison);
    c_in = c;
    const int rows = is_silu(v) ? 2 * n : n;
    partial.assign(static_cast<size_t>(splits) * m * rows, -1.0f);
    counters.assign(static_cast<size_t>((n + 7) / 8), 0);
  }

  kern::Status run(int rows_m, size_t row0 = 0, uint32_t block = 128) {
    ArgPack p;
    p.add(a.data() + a_off + row0 * lda);
    if (is_norm(v)) p.add(nw.data());
    p.add(w.data());
    if (v == V::kResidual) p.add(residual.data() + row0 * ldc);
    p.add(c.data() + c_off + row0 * ldc).add(partial.data()).add(counters.data());
    p.add<int32_t>(rows_m).add<int32_t>(n).add<int32_t>(k).add<int32_t>(lda).add<int32_t>(ldc).add<int32_t>(splits);
    if (is_norm(v)) p.add(kEps);
    kern::cpu::CpuLaunch l;
    l.grid[0] = static_cast<uint32_t>((n + 7) / 8);
    l.grid[1] = static_cast<uint32_t>(splits);
    l.block[0] = block;
    l.shared_mem_bytes = is_norm(v) ? static_cast<uint64_t>(rows_m) * k * 2 : 0;
    l.args = p.data();
    l.num_args = p.size();
    return kern::cpu::find_cpu_kernel(symbol(v))->run(l);
  }

  /// The input row i as the dot sees it (normalised in double for the
  /// RMSNorm variants, before the bf16 rounding) and its per-element bound.
  void input_row(int i, std::vector<double>& x, std::vector<double>& x_err) const {
    x.assign(k, 0.0);
    x_err.assign(k, 0.0);
    const uint16_t* ar = a.data() + a_off + static_cast<size_t>(i) * lda;
    double ss = 0.0;
    for (int j = 0; j < k; ++j) ss += bf(ar[j]) * bf(ar[j]);
    const double inv = 1.0 / std::sqrt(ss / k + kEps);
    for (int j = 0; j < k; ++j) {
      if (is_norm(v)) {
        x[j] = bf(ar[j]) * inv * bf(nw[j]);
        // bf16 rounding of the normalised value (half an ulp, 2^-9 relative)
        // plus the f32 error of inv and of the two products.
        x_err[j] = std::abs(x[j]) * (std::ldexp(1.0, -8) + (k + 8) * kU);
      } else {
        x[j] = bf(ar[j]);
      }
    }
  }

  /// Dot of input row (x, x_err) with a [k] bf16 row, and its error bound.
  std::pair<double, double> dot(const std::vector<double>& x, const std::vector<double>& x_err,
                                const uint16_t* wr) const {
    double d = 0.0, mag = 0.0, prop = 0.0;
    for (int j = 0; j < k; ++j) {
      d += x[j] * bf(wr[j]);
      mag += std::abs(x[j] * bf(wr[j]));
      prop += x_err[j] * std::abs(bf(wr[j]));
    }
    return {d, prop + (k + 2) * kU * (mag + prop)};
  }

  void check_against_formula() {
    for (int i = 0; i < m; ++i) {
      std::vector<double> x, x_err;
      input_row(i, x, x_err);
      std::vector<uint16_t> out(c.begin() + c_off + static_cast<size_t>(i) * ldc,
                                c.begin() + c_off + static_cast<size_t>(i) * ldc + n);
      std::vector<double> ref(n), err(n);
      for (int j = 0; j < n; ++j) {
        const size_t ci = c_off + static_cast<size_t>(i) * ldc + j;
        if (is_silu(v)) {
          const auto [g, eg] = dot(x, x_err, gate.data() + static_cast<size_t>(j) * k);
          const auto [u, eu] = dot(x, x_err, up.data() + static_cast<size_t>(j) * k);
          const double s = g / (1.0 + std::exp(-g));
          ref[j] = s * u;
          // |silu'| <= 1.1; exp, division and the products: a few u each.
          err[j] = 1.1 * eg * (std::abs(u) + eu) + std::abs(s) * eu + 8 * kU * std::abs(ref[j]);
        } else {
          const auto [d, e] = dot(x, x_err, w.data() + static_cast<size_t>(j) * k);
          double old = 0.0;
          if (v == V::kAcc) old = bf(c_in[ci]);
          if (v == V::kResidual) old = bf(residual[static_cast<size_t>(i) * ldc + j]);
          ref[j] = old + d;
          err[j] = e + kU * (std::abs(old) + std::abs(d));
        }
      }
      INFO(symbol(v) << " m " << m << " n " << n << " k " << k << " splits " << splits << " row " << i);
      check_bf16(out, ref, err);
    }
    // Nothing outside the m x n window was written; the counters stay zero.
    for (size_t idx = 0; idx < c.size(); ++idx) {
      const bool inside = idx >= c_off && (idx - c_off) / ldc < static_cast<size_t>(m) &&
                          (idx - c_off) % ldc < static_cast<size_t>(n);
      if (!inside) REQUIRE(c[idx] == c_in[idx]);
    }
    for (const int32_t x : counters) REQUIRE(x == 0);
  }
};

const V kAll[] = {V::kStore, V::kAcc, V::kResidual, V::kSiluMul, V::kNorm, V::kNormSiluMul};

}  // namespace

TEST_CASE("every gemv variant matches its double-precision formula at m = 1 and m = 8",
          "[kernels][gemv]") {
  std::mt19937 rng(141);
  // Odd n (a partial last tile) and odd k (a partial last 8-group; the
  // strided a rows also force the scalar order), k % 8 == 0, several splits.
  for (const V v : kAll) {
    for (const auto& [m, n, k, splits] : std::vector<std::tuple<int, int, int, int>>{
             {1, 1, 1, 1}, {1, 13, 37, 1}, {8, 13, 37, 2}, {1, 37, 256, 3}, {8, 21, 1001, 4}, {8, 64, 512, 1}}) {
      Case c(v, m, n, k, splits, rng);
      const kern::Status s = c.run(m);
      INFO(symbol(v) << ": " << (s.ok() ? "" : s.error().message));
      REQUIRE(s.ok());
      c.check_against_formula();
    }
  }
}

TEST_CASE("a gemv row computed at m = 8 equals the same row computed alone, bit for bit",
          "[kernels][gemv]") {
  std::mt19937 rng(142);
  // n = 19: one thread over the columns; n = 300, k = 1024: two or more
  // (on a machine with the cores), chunks of columns taken at run time
  // (run_chunks), and the prologue's rows on threads.
  for (const V v : kAll) {
    for (const auto& [splits, n, k] : {std::tuple{1, 19, 777}, std::tuple{3, 19, 777}, std::tuple{1, 300, 1024},
                                       std::tuple{3, 300, 1024}}) {
      Case all(v, 8, n, k, splits, rng);
      REQUIRE(all.run(8).ok());
      for (int i = 0; i < 8; ++i) {
        Case one = all;
        one.c = one.c_in;
        REQUIRE(one.run(1, static_cast<size_t>(i)).ok());
        for (int j = 0; j < all.n; ++j) {
          const size_t ci = all.c_off + static_cast<size_t>(i) * all.ldc + j;
          INFO(symbol(v) << " splits " << splits << " row " << i << " column " << j);
          REQUIRE(one.c[ci] == all.c[ci]);
        }
      }
    }
  }
}

TEST_CASE("a split gemv writes each split's sum to partial and merges them in split order",
          "[kernels][gemv]") {
  std::mt19937 rng(143);
  Case c(V::kStore, 2, 9, 300, 3, rng);
  REQUIRE(c.run(2).ok());
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 9; ++j) {
      const auto part = [&](int s) { return c.partial[(static_cast<size_t>(s) * 2 + i) * 9 + j]; };
      const float merged = (part(0) + part(1)) + part(2);
      CHECK(c.c[c.c_off + static_cast<size_t>(i) * c.ldc + j] == kern::f32_to_bf16(merged));
    }
  }
}

TEST_CASE("gemv rejects m > 8, a wrong block, a grid.y other than splits and too little shared memory",
          "[kernels][gemv]") {
  std::mt19937 rng(144);
  Case c(V::kNorm, 8, 9, 16, 2, rng);
  std::vector<uint16_t> big_a(static_cast<size_t>(9) * c.lda);
  const std::string name = "kern_gemv_rmsnorm_bf16";
  auto launch_with = [&](int m, uint32_t gy, uint32_t block, uint64_t smem) {
    ArgPack p;
    p.add(big_a.data()).add(c.nw.data()).add(c.w.data()).add(c.c.data()).add(c.partial.data()).add(c.counters.data());
    p.add<int32_t>(m).add<int32_t>(9).add<int32_t>(16).add<int32_t>(c.lda).add<int32_t>(c.ldc).add<int32_t>(2);
    p.add(kEps);
    kern::cpu::CpuLaunch l;
    l.grid[0] = 2;
    l.grid[1] = gy;
    l.block[0] = block;
    l.shared_mem_bytes = smem;
    l.args = p.data();
    l.num_args = p.size();
    return kern::cpu::find_cpu_kernel(name)->run(l);
  };
  const auto expect = [&](const kern::Status& s, const std::string& needle) {
    REQUIRE_FALSE(s.ok());
    INFO(s.error().message);
    CHECK(s.error().message.find(needle) != std::string::npos);
  };
  expect(launch_with(9, 2, 128, 9 * 16 * 2), "param 6 (m) is 9; must be <= 8");
  expect(launch_with(8, 2, 256, 8 * 16 * 2), "block is [256, 1, 1]; must be [128, 1, 1]");
  expect(launch_with(8, 1, 128, 8 * 16 * 2), "grid.y is 1; must equal param 11 (splits) = 2");
  expect(launch_with(8, 2, 128, 8 * 16 * 2 - 1), "shared_mem is 255 B; must be >= m * k * 2 = 256");
  CHECK(launch_with(8, 2, 128, 8 * 16 * 2).ok());
}

TEST_CASE("gemv_rmsnorm_argmax writes the rmsnorm gemv's logits, per-tile argmax partials and their argmax",
          "[kernels][gemv]") {
  std::mt19937 rng(145);
  // The second shape is large enough that the twin runs its column tiles on
  // several threads (m n k > 2^20), each computing its own tiles' partials.
  for (const auto& [n, k] : {std::pair{37, 40}, std::pair{4099, 512}})
  for (const int m : {1, 8}) {
    INFO("n " << n << " k " << k << " m " << m);
    const int tiles = (n + 7) / 8;
    Case c(V::kNorm, m, n, k, 2, rng);
    // Columns 5 and 20 share the largest logit in every row (w rows all 1.0
    // against a positive normalised row): the tie goes to column 5.
    std::fill(c.a.begin(), c.a.end(), kern::f32_to_bf16(0.5f));
    for (int x = 0; x < k; ++x) {
      c.w[static_cast<size_t>(5) * k + x] = c.w[static_cast<size_t>(20) * k + x] = kern::f32_to_bf16(1.0f);
    }
    REQUIRE(c.run(m).ok());  // the plain rmsnorm gemv: reference logits
    std::vector<uint16_t> logits = c.c;
    std::vector<uint16_t> out(c.c_in);
    // The cells between rows (columns n .. ldc - 1, which the last tile's 8
    // columns overlap) and past the last row hold a logit larger than any
    // computed one: a tile loop reading past column n would pick it.
    const uint16_t huge = kern::f32_to_bf16(1e30f);
    for (size_t x = c.c_off; x < out.size(); ++x) {
      if ((x - c.c_off) % static_cast<size_t>(c.ldc) >= static_cast<size_t>(n) ||
          (x - c.c_off) / static_cast<size_t>(c.ldc) >= static_cast<size_t>(m)) {
        out[x] = logits[x] = huge;
      }
    }
    std::vector<float> val(static_cast<size_t>(m) * tiles, -1.0f);
    std::vector<int32_t> idx(static_cast<size_t>(m) * tiles, -1);
    std::vector<int32_t> counters(static_cast<size_t>(tiles) + 1, 0);  // the tile counters, then the argmax's
    std::vector<int64_t> next(m, -1);
    ArgPack p;
    p.add(c.a.data() + c.a_off).add(c.nw.data()).add(c.w.data()).add(out.data() + c.c_off).add(c.partial.data());
    p.add(counters.data()).add(val.data()).add(idx.data()).add(next.data()).add<int32_t>(m).add<int32_t>(n);
    p.add<int32_t>(k);
    p.add<int32_t>(c.lda).add<int32_t>(c.ldc).add<int32_t>(2).add(kEps);
    kern::cpu::CpuLaunch l;
    l.grid[0] = static_cast<uint32_t>(tiles);
    l.grid[1] = 2;
    l.block[0] = 128;
    l.shared_mem_bytes = static_cast<uint64_t>(m) * k * 2;
    l.args = p.data();
    l.num_args = p.size();
    REQUIRE(kern::cpu::find_cpu_kernel("kern_gemv_rmsnorm_argmax_bf16")->run(l).ok());
    CHECK(out == logits);
    for (int i = 0; i < m; ++i) {
      for (int t = 0; t < tiles; ++t) {
        int best = -1;
        for (int j = 8 * t; j < std::min(n, 8 * t + 8); ++j) {
          const uint16_t x = logits[c.c_off + static_cast<size_t>(i) * c.ldc + j];
          if (best < 0 || bf(x) > bf(logits[c.c_off + static_cast<size_t>(i) * c.ldc + best])) best = j;
        }
        INFO("row " << i << " tile " << t);
        CHECK(idx[static_cast<size_t>(i) * tiles + t] == best);
        CHECK(val[static_cast<size_t>(i) * tiles + t] == static_cast<float>(bf(logits[c.c_off + static_cast<size_t>(i) * c.ldc + best])));
      }
    }
    std::vector<int64_t> token(m, -1);
    ArgPack r;
    r.add(val.data()).add(idx.data()).add(token.data()).add<int32_t>(m).add<int32_t>(tiles);
    launch_ok("kern_argmax_reduce", r, static_cast<uint32_t>(m), 1, 1, 64);
    for (int i = 0; i < m; ++i) CHECK(token[i] == 5);
    // The last tile block's reduce: the same token, the counters left at zero.
    CHECK(next == token);
    for (const int32_t x : counters) CHECK(x == 0);
  }
}
