// Deterministic random weights without a file (random_weights.h).
#include "kern-load/random_weights.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <thread>

#include "kern-load/plan_expr.h"

namespace kern::load {

namespace {

/// splitmix64: a well-mixed 64-bit value of `x` (seeding and counter mode).
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// FNV-1a of the buffer name.
uint64_t name_hash(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return h;
}

uint16_t to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even (values here are finite)
  return static_cast<uint16_t>(u >> 16);
}

uint64_t element_count(std::span<const uint64_t> shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

/// (center, half-width) of a buffer's uniform distribution.
std::pair<float, float> value_range(plan::DType dtype, std::span<const uint64_t> shape) {
  if (dtype == plan::DType::f32) return element_count(shape) == 1 ? std::pair{1.0f, 0.0f} : std::pair{0.0f, 1.0f};
  if (shape.size() <= 1) return {1.0f, 0.1f};
  const uint64_t fan_in = shape.back() > 0 ? shape.back() : 1;
  return {0.0f, static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in)))};
}

}  // namespace

void random_weight_values(uint64_t seed, std::string_view name, plan::DType dtype, std::span<const uint64_t> shape,
                          uint64_t first, std::span<uint8_t> out) {
  const bool bf16 = dtype == plan::DType::bf16;
  if (!bf16 && dtype != plan::DType::f32) {
    std::memset(out.data(), 0, out.size());
    return;
  }
  const auto [center, half] = value_range(dtype, shape);
  const uint64_t key = mix64(seed ^ mix64(name_hash(name)));
  const size_t esize = bf16 ? 2 : 4;
  const uint64_t n = out.size() / esize;
  // Counter mode: element i uses 16 bits of mix64(key + i / 4), so any chunk
  // reproduces the same values. u in [0, 65536) maps to center + half * (2u + 1 - 65536) / 65536.
  const float scale = half / 32768.0f;
  for (uint64_t i = 0; i < n;) {
    const uint64_t e = first + i;
    const uint64_t word = mix64(key + e / 4);
    for (uint64_t lane = e % 4; lane < 4 && i < n; ++lane, ++i) {
      const auto u = static_cast<int32_t>((word >> (16 * lane)) & 0xFFFFu);
      const float v = center + scale * (static_cast<float>(u - 32768) + 0.5f);
      if (bf16) {
        const uint16_t b = to_bf16(v);
        std::memcpy(out.data() + 2 * i, &b, 2);
      } else {
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
    }
  }
}

Result<uint64_t> fill_random_weights(const plan::Plan& p, uint64_t seed, Device& device,
                                     std::span<const DevicePtr> buffer_addresses,
                                     const std::function<void(uint64_t, uint64_t)>* progress) {
  constexpr uint64_t kChunkBytes = 8ull << 20;
  // Counter mode makes chunks independent: up to 16 are generated at once,
  // one thread each, then copied in order (the host generates about 0.65 GB/s
  // per core, so a Qwen3-4B's 8 GB costs about the copy, not 12 s).
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  uint64_t total = 0;
  for (const auto* b : *p.buffers())
    if (b->class_() == plan::BufferClass::weight) total += b->max_size_bytes();
  std::vector<std::vector<uint8_t>> chunks(threads);
  uint64_t done = 0;
  for (flatbuffers::uoffset_t i = 0; i < p.buffers()->size(); ++i) {
    const auto* b = p.buffers()->Get(i);
    if (b->class_() != plan::BufferClass::weight || b->max_size_bytes() == 0) continue;
    if (b->dtype() != plan::DType::bf16 && b->dtype() != plan::DType::f32) continue;  // stays zero
    std::vector<uint64_t> shape;
    for (const auto* d : *b->shape()) shape.push_back(evaluate_chain_at_max(*d, p).value_or(0));
    const uint64_t esize = b->dtype() == plan::DType::bf16 ? 2 : 4;
    const uint64_t bytes = b->max_size_bytes();
    for (uint64_t off = 0; off < bytes; off += threads * kChunkBytes) {
      const unsigned batch = static_cast<unsigned>(std::min<uint64_t>(threads, (bytes - off + kChunkBytes - 1) / kChunkBytes));
      auto generate = [&](unsigned c) {
        const uint64_t at = off + c * kChunkBytes;
        chunks[c].resize(std::min(kChunkBytes, bytes - at));
        random_weight_values(seed, b->name()->string_view(), b->dtype(), shape, at / esize, chunks[c]);
      };
      std::vector<std::thread> workers;
      for (unsigned c = 1; c < batch; ++c) workers.emplace_back(generate, c);
      generate(0);
      for (auto& w : workers) w.join();
      for (unsigned c = 0; c < batch; ++c)
        KERN_RETURN_IF_ERROR(device.copy_to_device(buffer_addresses[i] + off + c * kChunkBytes, chunks[c].data(),
                                                   chunks[c].size()),
                             "random weight '" + b->name()->str() + "'");
    }
    done += bytes;
    if (progress != nullptr) (*progress)(done, total);
  }
  return done;
}

}  // namespace kern::load
