// kern_reshape_and_cache_bf16 (docs/kernels.md §7): writes exactly the
// documented elements of the paged, layer-interleaved cache and nothing else.
// The expected element offsets are computed here from the layout text:
// [page][layer][16 slots][kv heads][2 (k, v)][head_dim].
#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

struct CacheCase {
  int kv_heads, dim, layers, layer, pages;
  float k_scale, v_scale;
  std::vector<int64_t> slots;
};

/// Runs the kernel on a poisoned cache and returns (cache, k, v, strides).
struct CacheRun {
  std::vector<uint16_t> cache, k, v;
  int k_stride, v_stride;
  int64_t page_stride, layer_base;
};

CacheRun run_cache_write(const CacheCase& c, std::mt19937& rng) {
  CacheRun r;
  const int tokens = static_cast<int>(c.slots.size());
  r.k_stride = c.kv_heads * c.dim + 5;   // views into a wider row
  r.v_stride = c.kv_heads * c.dim + 11;
  r.page_stride = static_cast<int64_t>(c.layers) * 16 * c.kv_heads * 2 * c.dim;
  r.layer_base = static_cast<int64_t>(c.layer) * 16 * c.kv_heads * 2 * c.dim;
  r.cache.assign(static_cast<size_t>(c.pages * r.page_stride), kPoison);
  r.k = random_bf16(rng, static_cast<size_t>(tokens) * r.k_stride);
  r.v = random_bf16(rng, static_cast<size_t>(tokens) * r.v_stride);
  const float ks = c.k_scale, vs = c.v_scale;
  ArgPack a;
  a.add(r.k.data()).add(r.v.data()).add(r.cache.data() + r.layer_base).add(c.slots.data());
  a.add(&ks).add(&vs).add<int32_t>(tokens).add<int32_t>(c.kv_heads).add<int32_t>(c.dim);
  a.add<int32_t>(r.k_stride).add<int32_t>(r.v_stride).add<int64_t>(r.page_stride);
  launch_ok("kern_reshape_and_cache_bf16", a, tokens);
  return r;
}

}  // namespace

TEST_CASE("reshape_and_cache writes k/scale and v/scale at exactly the documented offsets",
          "[kernels][kv_cache]") {
  std::mt19937 rng(51);
  // Slots cross pages (15 -> 16 -> 17, 40 on page 2), one is padding (-1);
  // layer 1 of 3; power-of-two scales make the stored values exact.
  const CacheCase c{2, 8, 3, 1, 4, 0.5f, 2.0f, {0, 17, -1, 15, 40, 16}};
  const CacheRun r = run_cache_write(c, rng);
  std::vector<uint16_t> expected(r.cache.size(), kPoison);
  for (size_t t = 0; t < c.slots.size(); ++t) {
    const int64_t s = c.slots[t];
    if (s < 0) continue;
    for (int h = 0; h < c.kv_heads; ++h) {
      for (int j = 0; j < c.dim; ++j) {
        const int64_t k_at = (s / 16) * r.page_stride + r.layer_base +
                             ((s % 16) * c.kv_heads + h) * 2 * c.dim + j;
        const double k = bf(r.k[t * r.k_stride + h * c.dim + j]) / c.k_scale;
        const double v = bf(r.v[t * r.v_stride + h * c.dim + j]) / c.v_scale;
        expected[k_at] = kern::f32_to_bf16(static_cast<float>(k));  // exact: power-of-two scale
        expected[k_at + c.dim] = kern::f32_to_bf16(static_cast<float>(v));
        REQUIRE(bf(expected[k_at]) == k);
        REQUIRE(bf(expected[k_at + c.dim]) == v);
      }
    }
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("cache element " << i << " (page " << i / r.page_stride << ")");
    REQUIRE(r.cache[i] == expected[i]);
  }
}

TEST_CASE("reshape_and_cache divides by a non-power-of-two scale in f32 before rounding",
          "[kernels][kv_cache]") {
  std::mt19937 rng(52);
  const CacheCase c{1, 16, 1, 0, 1, 3.0f, 0.75f, {3}};
  const CacheRun r = run_cache_write(c, rng);
  for (int j = 0; j < c.dim; ++j) {
    const int64_t k_at = 3 * 2 * c.dim + j;
    const double k = bf(r.k[j]) / 3.0, v = bf(r.v[j]) / 0.75;
    CHECK(bf16_close(r.cache[k_at], k, kU * std::abs(k)));
    CHECK(bf16_close(r.cache[k_at + c.dim], v, kU * std::abs(v)));
  }
}

TEST_CASE("reshape_and_cache skips every token whose slot is negative", "[kernels][kv_cache]") {
  std::mt19937 rng(53);
  const CacheRun r = run_cache_write(CacheCase{2, 8, 2, 1, 1, 1.0f, 1.0f, {-1, -7, -1}}, rng);
  for (const uint16_t e : r.cache) REQUIRE(e == kPoison);
}
