// kern_qk_norm_rope_cache_bf16 (docs/kernels.md §12) against the
// double-precision formula, and bit for bit against the unfused chain it
// replaces (head_rmsnorm for q and k, rope, reshape_and_cache) on the same
// inputs: fused qkv rows with padding, several tokens, a skipped slot.
#include <cmath>
#include <tuple>

#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

struct Problem {
  int t, h, kv, d, stride;
  int64_t page_stride;
  std::vector<uint16_t> qkv, qw, kw;
  std::vector<int64_t> pos, slots;
  std::vector<float> cos_sin, k_scale{0.75f}, v_scale{1.25f};
  std::vector<uint16_t> q_out, cache;
  uint8_t neox = 1;
  bool norm = true;  ///< false: rope_flags bit 1, no q/k norm (the weights are passed as null: never read)

  Problem(int t_, int h_, int kv_, int d_, std::mt19937& rng)
      : t(t_), h(h_), kv(kv_), d(d_), stride((h_ + 2 * kv_) * d_ + 6), page_stride(int64_t{16} * kv_ * 2 * d_ * 2) {
    qkv = random_bf16(rng, static_cast<size_t>(t) * stride, -3.0f, 3.0f);
    qw = random_bf16(rng, d, 0.5f, 1.5f);
    kw = random_bf16(rng, d, 0.5f, 1.5f);
    const int max_pos = 64;
    cos_sin.resize(static_cast<size_t>(max_pos) * d);
    for (int p = 0; p < max_pos; ++p) {
      for (int i = 0; i < d / 2; ++i) {
        const double a = p * std::pow(10000.0, -2.0 * i / d);
        cos_sin[static_cast<size_t>(p) * d + i] = static_cast<float>(std::cos(a));
        cos_sin[static_cast<size_t>(p) * d + d / 2 + i] = static_cast<float>(std::sin(a));
      }
    }
    std::uniform_int_distribution<int> pd(0, max_pos - 1);
    for (int i = 0; i < t; ++i) {
      pos.push_back(pd(rng));
      slots.push_back(i == 1 ? -1 : 3 + 7 * i);  // token 1: a padding token (skipped)
    }
    q_out.assign(static_cast<size_t>(t) * h * d, kPoison);
    cache.assign(static_cast<size_t>(page_stride) * 4, kPoison);  // 4 pages
  }

  void run_fused() {
    ArgPack a;
    a.add(qkv.data()).add(norm ? qw.data() : nullptr).add(norm ? kw.data() : nullptr).add(pos.data());
    a.add(cos_sin.data()).add(q_out.data());
    a.add(cache.data()).add(slots.data()).add(k_scale.data()).add(v_scale.data());
    a.add<int32_t>(t).add<int32_t>(h).add<int32_t>(kv).add<int32_t>(d).add<int32_t>(stride).add(page_stride);
    a.add(kEps).add<uint8_t>(static_cast<uint8_t>(neox | (norm ? 0 : 2)));
    launch_ok("kern_qk_norm_rope_cache_bf16", a, static_cast<uint32_t>((h + 2 * kv + 3) / 4),
              static_cast<uint32_t>(t));
  }

  /// head_rmsnorm (q, k) + rope + reshape_and_cache on copies of the inputs
  /// (without `norm`: the raw heads copied, then rope + reshape_and_cache).
  void run_unfused(std::vector<uint16_t>& q, std::vector<uint16_t>& c) {
    std::vector<uint16_t> qn(static_cast<size_t>(t) * h * d), kn(static_cast<size_t>(t) * kv * d);
    if (norm) norm_heads(qn, kn);
    for (int i = 0; i < t && !norm; ++i) {
      const uint16_t* row = qkv.data() + static_cast<size_t>(i) * stride;
      std::copy(row, row + h * d, qn.begin() + static_cast<ptrdiff_t>(i) * h * d);
      std::copy(row + h * d, row + (h + kv) * d, kn.begin() + static_cast<ptrdiff_t>(i) * kv * d);
    }
    ArgPack r;
    r.add(pos.data()).add(qn.data()).add(kn.data()).add(cos_sin.data()).add<int32_t>(t).add<int32_t>(h);
    r.add<int32_t>(kv).add<int32_t>(d).add<int32_t>(h * d).add<int32_t>(kv * d).add<uint8_t>(neox);
    launch_ok("kern_rope_bf16", r, static_cast<uint32_t>(t));
    ArgPack w;
    w.add(kn.data()).add(qkv.data() + static_cast<size_t>(h + kv) * d).add(c.data()).add(slots.data());
    w.add(k_scale.data()).add(v_scale.data()).add<int32_t>(t).add<int32_t>(kv).add<int32_t>(d);
    w.add<int32_t>(kv * d).add<int32_t>(stride).add(page_stride);
    launch_ok("kern_reshape_and_cache_bf16", w, static_cast<uint32_t>(t));
    q = qn;
  }

  /// head_rmsnorm of the q and the k heads into qn, kn.
  void norm_heads(std::vector<uint16_t>& qn, std::vector<uint16_t>& kn) {
    ArgPack nq;
    nq.add(qkv.data()).add(qw.data()).add(qn.data()).add<int32_t>(t * h).add<int32_t>(h).add<int32_t>(d);
    nq.add<int32_t>(stride).add<int32_t>(h * d).add(kEps);
    launch_ok("kern_head_rmsnorm_bf16", nq, static_cast<uint32_t>((t * h + 3) / 4));
    ArgPack nk;
    nk.add(qkv.data() + static_cast<size_t>(h) * d).add(kw.data()).add(kn.data()).add<int32_t>(t * kv);
    nk.add<int32_t>(kv).add<int32_t>(d).add<int32_t>(stride).add<int32_t>(kv * d).add(kEps);
    launch_ok("kern_head_rmsnorm_bf16", nk, static_cast<uint32_t>((t * kv + 3) / 4));
  }

  /// Element offset of kv head `head`'s k in slot `slot` (docs/kernels.md layout).
  int64_t slot_offset(int64_t slot, int head) const {
    return (slot / 16) * page_stride + ((slot % 16) * kv + head) * 2 * d;
  }

  /// Checks one rotated head against the formula in double (`scale` divides the result).
  void check_head(const uint16_t* x, const std::vector<uint16_t>& w, int64_t p, const uint16_t* out,
                  double scale) const {
    double ss = 0.0;
    for (int i = 0; i < d; ++i) ss += bf(x[i]) * bf(x[i]);
    const double inv = 1.0 / std::sqrt(ss / d + kEps);
    std::vector<double> n(d);
    for (int i = 0; i < d; ++i) n[i] = round_bf16_ref(bf(x[i]) * inv * bf(w[i]));
    std::vector<uint16_t> got(out, out + d);
    std::vector<double> ref(d), err(d);
    for (int i = 0; i < d / 2; ++i) {
      const double c = cos_sin[static_cast<size_t>(p) * d + i], s = cos_sin[static_cast<size_t>(p) * d + d / 2 + i];
      const double mag = std::abs(n[i] * c) + std::abs(n[i + d / 2] * s);
      ref[i] = (n[i] * c - n[i + d / 2] * s) / scale;
      ref[i + d / 2] = (n[i + d / 2] * c + n[i] * s) / scale;
      // One bf16 ulp of slack in the normalised inputs (the f32 and double
      // values may round either way at a boundary), the rotation's rounding.
      err[i] = err[i + d / 2] = (std::ldexp(mag, -7) + std::ldexp(std::abs(ref[i]) * scale + mag, -8)) / scale;
    }
    check_bf16(got, ref, err);
  }
};

}  // namespace

TEST_CASE("qk_norm_rope_cache matches the formula: normalised, rotated q and k, scaled k and v in the cache",
          "[kernels][qk_norm_rope_cache]") {
  std::mt19937 rng(151);
  for (const auto& [t, h, kv, d] : std::vector<std::tuple<int, int, int, int>>{{1, 4, 2, 16}, {3, 3, 1, 10}, {2, 8, 2, 128}}) {
    Problem p(t, h, kv, d, rng);
    p.run_fused();
    for (int i = 0; i < t; ++i) {
      const uint16_t* row = p.qkv.data() + static_cast<size_t>(i) * p.stride;
      for (int hh = 0; hh < h; ++hh) {
        INFO("t " << i << " q head " << hh << " d " << d);
        p.check_head(row + hh * d, p.qw, p.pos[i], p.q_out.data() + (static_cast<size_t>(i) * h + hh) * d, 1.0);
      }
      if (p.slots[i] < 0) continue;
      for (int hh = 0; hh < kv; ++hh) {
        INFO("t " << i << " kv head " << hh << " d " << d);
        const uint16_t* dst = p.cache.data() + p.slot_offset(p.slots[i], hh);
        p.check_head(row + (h + hh) * d, p.kw, p.pos[i], dst, p.k_scale[0]);
        for (int x = 0; x < d; ++x) {
          const double v = bf(row[(h + kv + hh) * d + x]) / p.v_scale[0];
          REQUIRE(bf16_close(dst[d + x], v, kU * std::abs(v)));
        }
      }
    }
    // The skipped token wrote no slot: every element not in a written slot is still poison.
    size_t written = 0;
    for (const uint16_t x : p.cache) written += x != kPoison;
    CHECK(written <= static_cast<size_t>(t - (t > 1 ? 1 : 0)) * kv * 2 * d);
  }
}

TEST_CASE("qk_norm_rope_cache gives exactly the values of head_rmsnorm + rope + reshape_and_cache",
          "[kernels][qk_norm_rope_cache]") {
  std::mt19937 rng(152);
  for (const uint8_t neox : {1, 0}) {  // neox pairs, and interleaved (GPT-J) ones as rope's is_neox = 0
    Problem p(3, 8, 2, 64, rng);
    p.neox = neox;
    p.run_fused();
    std::vector<uint16_t> q, cache(p.cache.size(), kPoison);
    p.run_unfused(q, cache);
    INFO("is_neox " << int(neox));
    CHECK(p.q_out == q);
    CHECK(p.cache == cache);
  }
}

TEST_CASE("qk_norm_rope_cache with rope_flags bit 1 (no q/k norm) gives exactly rope + reshape_and_cache of the raw "
          "heads and reads no norm weight",
          "[kernels][qk_norm_rope_cache]") {
  std::mt19937 rng(154);
  for (const auto& [h, kv, d] : std::vector<std::tuple<int, int, int>>{{3, 3, 16}, {8, 2, 32}, {4, 1, 128}}) {
    for (const uint8_t neox : {1, 0}) {
      Problem p(3, h, kv, d, rng);
      p.neox = neox;
      p.norm = false;  // null norm weights: a read would fail the launch
      p.run_fused();
      std::vector<uint16_t> q, cache(p.cache.size(), kPoison);
      p.run_unfused(q, cache);
      INFO("h " << h << " kv " << kv << " d " << d << " neox " << int(neox));
      CHECK(p.q_out == q);
      CHECK(p.cache == cache);
      // Differs from the normed values (the flag is honoured, not ignored).
      Problem n = p;
      n.norm = true;
      n.q_out.assign(n.q_out.size(), kPoison);
      n.run_fused();
      CHECK(n.q_out != p.q_out);
    }
  }
}

TEST_CASE("qk_norm_rope_cache rejects an odd head_dim, a short qkv_stride, a negative position and unknown rope_flags",
          "[kernels][qk_norm_rope_cache]") {
  std::mt19937 rng(153);
  Problem p(1, 2, 1, 8, rng);
  const auto run = [&](int d, int stride, int64_t position) {
    p.pos[0] = position;
    ArgPack a;
    a.add(p.qkv.data()).add(p.qw.data()).add(p.kw.data()).add(p.pos.data()).add(p.cos_sin.data()).add(p.q_out.data());
    a.add(p.cache.data()).add(p.slots.data()).add(p.k_scale.data()).add(p.v_scale.data());
    a.add<int32_t>(1).add<int32_t>(2).add<int32_t>(1).add<int32_t>(d).add<int32_t>(stride).add(p.page_stride).add(kEps).add<uint8_t>(1);
    return launch("kern_qk_norm_rope_cache_bf16", a, 1, 1);
  };
  const auto expect = [](const kern::Status& s, const std::string& needle) {
    REQUIRE_FALSE(s.ok());
    INFO(s.error().message);
    CHECK(s.error().message.find(needle) != std::string::npos);
  };
  expect(run(7, p.stride, 0), "param 13 (head_dim) is 7; must be even and <= 512");
  expect(run(8, 31, 0), "param 14 (qkv_stride) is 31; must be >= 32");
  expect(run(8, p.stride, -2), "positions[0] is -2; must be >= 0");
  CHECK(run(8, p.stride, 5).ok());
  ArgPack bad;  // rope_flags 4: an unknown bit
  bad.add(p.qkv.data()).add(p.qw.data()).add(p.kw.data()).add(p.pos.data()).add(p.cos_sin.data()).add(p.q_out.data());
  bad.add(p.cache.data()).add(p.slots.data()).add(p.k_scale.data()).add(p.v_scale.data());
  bad.add<int32_t>(1).add<int32_t>(2).add<int32_t>(1).add<int32_t>(8).add<int32_t>(p.stride).add(p.page_stride);
  bad.add(kEps).add<uint8_t>(4);
  expect(launch("kern_qk_norm_rope_cache_bf16", bad, 1, 1), "param 17 (rope_flags) is 4; must be 0 to 3");
}
