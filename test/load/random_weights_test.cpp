// Random weights by seed (random_weights.h): value ranges per kind of
// buffer, determinism, chunk invariance, and Executable::load filling the
// weight buffers on the cpu device without a file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "kern-load/cpu_device.h"
#include "kern-load/executable.h"
#include "kern-load/random_weights.h"
#include "test/load/fake_kernels.h"
#include "test/load/plan_builder.h"

using namespace kern;
using namespace kern::test;

namespace {

float bf16_value(const uint8_t* p) {
  uint16_t b;
  std::memcpy(&b, p, 2);
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// The tiny plan plus unused weight buffers of each kind (10..13).
PlanDesc plan_with_weights() {
  PlanDesc d = tiny_plan();
  using E = ExprDesc;
  d.buffers.push_back({"norm.weight", plan::DType::bf16, plan::BufferClass::weight, {E::c(64)}, 128});
  d.buffers.push_back({"proj.weight", plan::DType::bf16, plan::BufferClass::weight, {E::c(32), E::c(48)}, 32 * 48 * 2});
  d.buffers.push_back({"rope.cache", plan::DType::f32, plan::BufferClass::weight, {E::c(8), E::c(4)}, 128});
  d.buffers.push_back({"k_scale", plan::DType::f32, plan::BufferClass::weight, {E::c(1)}, 4});
  return d;
}

std::unique_ptr<load::Executable> load_random(uint64_t seed) {
  auto plan = load::PlanFile::from_bytes(serialize(plan_with_weights()), "w.kplan");
  REQUIRE(plan.ok());
  load::ExecutableOptions o;
  o.capacity_tokens = 16;
  o.random_weights_seed = seed;
  auto exe = load::Executable::load(std::move(plan.value()), std::make_unique<load::CpuDevice>(&fake_kernel),
                                    nullptr, o, nullptr);
  REQUIRE(exe.ok());
  return std::move(exe.value());
}

std::vector<uint8_t> read(load::Executable& exe, uint32_t buffer) {
  std::vector<uint8_t> v(exe.plan().buffers()->Get(buffer)->max_size_bytes());
  REQUIRE(exe.read_buffer(buffer, v).ok());
  return v;
}

}  // namespace

TEST_CASE("random weights fill each kind of weight buffer with sensibly scaled values", "[load][random]") {
  auto exe = load_random(7);
  const size_t base = tiny_plan().buffers.size();
  auto norm = read(*exe, base + 0);
  auto proj = read(*exe, base + 1);
  auto rope = read(*exe, base + 2);
  auto scale = read(*exe, base + 3);
  std::set<float> distinct;
  for (size_t i = 0; i < norm.size(); i += 2) {
    float v = bf16_value(&norm[i]);
    CHECK((v >= 0.89f && v <= 1.11f));
    distinct.insert(v);
  }
  CHECK(distinct.size() > 8);
  const float a = std::sqrt(3.0f / 48.0f);
  double sum = 0, sq = 0;
  for (size_t i = 0; i < proj.size(); i += 2) {
    float v = bf16_value(&proj[i]);
    CHECK(std::abs(v) <= a * 1.01f);
    sum += v;
    sq += double(v) * v;
  }
  const double n = proj.size() / 2.0;
  CHECK(std::abs(sum / n) < 0.03);
  CHECK(std::sqrt(sq / n) == Approx(a / std::sqrt(3.0)).epsilon(0.1));  // uniform: std = a / sqrt(3)
  for (size_t i = 0; i < rope.size(); i += 4) {
    float v;
    std::memcpy(&v, &rope[i], 4);
    CHECK(std::abs(v) <= 1.0f);
  }
  float k;
  std::memcpy(&k, scale.data(), 4);
  CHECK(k == 1.0f);
  auto bias = read(*exe, 1);  // i64 weight: left zero
  CHECK(std::all_of(bias.begin(), bias.end(), [](uint8_t b) { return b == 0; }));
  CHECK(exe->plan().buffers()->size() == base + 4);
}

TEST_CASE("random weights are the same for the same seed and differ for another seed", "[load][random]") {
  const uint32_t proj = static_cast<uint32_t>(tiny_plan().buffers.size() + 1);
  auto a = load_random(7), b = load_random(7), c = load_random(8);
  CHECK(read(*a, proj) == read(*b, proj));
  CHECK(read(*a, proj) != read(*c, proj));
}

TEST_CASE("random weight values do not depend on how the buffer is chunked", "[load][random]") {
  const uint64_t shape[] = {3, 333};
  std::vector<uint8_t> whole(999 * 2), parts(999 * 2);
  load::random_weight_values(5, "w", plan::DType::bf16, shape, 0, whole);
  load::random_weight_values(5, "w", plan::DType::bf16, shape, 0, std::span(parts).first(2 * 101));
  load::random_weight_values(5, "w", plan::DType::bf16, shape, 101, std::span(parts).subspan(2 * 101));
  CHECK(whole == parts);
  std::vector<uint8_t> other(999 * 2);
  load::random_weight_values(5, "v", plan::DType::bf16, shape, 0, other);
  CHECK(other != whole);  // keyed by the buffer name too
}

TEST_CASE("random weights and a weights file together are refused", "[load][random]") {
  auto plan = load::PlanFile::from_bytes(serialize(plan_with_weights()), "w.kplan");
  REQUIRE(plan.ok());
  load::ExecutableOptions o;
  o.capacity_tokens = 16;
  o.random_weights_seed = 1;
  auto exe = load::Executable::load(std::move(plan.value()), std::make_unique<load::CpuDevice>(&fake_kernel),
                                    reinterpret_cast<const load::Safetensors*>(&o), o, nullptr);
  REQUIRE_FALSE(exe.ok());
  CHECK(exe.error().message == "random weights and a weights file were both given");
}

TEST_CASE("a buffer of many 8 MiB chunks, generated several at once, holds the values of one sequential pass",
          "[load][random]") {
  // 37 MiB + 6 bytes of bf16: four whole chunks, a partial one (several threads, and a short last batch).
  const uint64_t cols = 4096, rows = (37ull << 20) / (2 * cols);
  PlanDesc d = tiny_plan();
  using E = ExprDesc;
  const uint64_t bytes = rows * cols * 2 + 6;
  d.buffers.push_back({"big.weight", plan::DType::bf16, plan::BufferClass::weight, {E::c(bytes / 2)}, bytes});
  auto plan = load::PlanFile::from_bytes(serialize(d), "w.kplan");
  REQUIRE(plan.ok());
  load::ExecutableOptions o;
  o.capacity_tokens = 16;
  o.random_weights_seed = 11;
  auto exe = load::Executable::load(std::move(plan.value()), std::make_unique<load::CpuDevice>(&fake_kernel), nullptr,
                                    o, nullptr);
  REQUIRE(exe.ok());
  const uint32_t big = static_cast<uint32_t>(d.buffers.size() - 1);
  std::vector<uint8_t> want(bytes);
  const uint64_t shape[] = {bytes / 2};
  load::random_weight_values(11, "big.weight", plan::DType::bf16, shape, 0, want);
  CHECK(read(*exe.value(), big) == want);
}
