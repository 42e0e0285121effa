// The fake reference kernels of the tiny test plan and their resolver (fake_kernels.h).
#include "test/load/fake_kernels.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace kern::test {

namespace {

Status fail(const std::string& what) { return make_error(ErrorKind::kKernel, what); }

// acc[i] = ids[i] + bias[i % 4]; grid [n, 1, 1].
Status add_bias(const cpu::CpuLaunch& l) {
  if (l.num_args != 4) return fail("test_add_bias: wrong arg count");
  auto* ids = l.arg<const int64_t*>(0);
  auto* bias = l.arg<const int64_t*>(1);
  auto* acc = l.arg<int64_t*>(2);
  int32_t n = l.arg<int32_t>(3);
  if (n < 1 || l.grid[0] != static_cast<uint32_t>(n) || l.block[0] != 32)
    return fail("test_add_bias: n " + std::to_string(n) + " grid " + std::to_string(l.grid[0]));
  for (int32_t i = 0; i < n; ++i) acc[i] = ids[i] + bias[i % 4];
  return {};
}

// tmp[i] = 2 * acc[i]; grid [ceil(n / 4), 2, 1].
Status double_it(const cpu::CpuLaunch& l) {
  auto* acc = l.arg<const int64_t*>(0);
  auto* tmp = l.arg<int64_t*>(1);
  int32_t n = l.arg<int32_t>(2);
  if (n < 1 || l.grid[0] != static_cast<uint32_t>((n + 3) / 4) || l.grid[1] != 2)
    return fail("test_double: bad grid for n " + std::to_string(n));
  for (int32_t i = 0; i < n; ++i) tmp[i] = 2 * acc[i];
  return {};
}

// out[i] = tmp[i] + k; kv[i] += 1; shared memory 16 * n bytes.
Status finish(const cpu::CpuLaunch& l) {
  auto* tmp = l.arg<const int64_t*>(0);
  auto* out = l.arg<int64_t*>(1);
  auto* kv = l.arg<int64_t*>(2);
  int64_t k = l.arg<int64_t>(3);
  int32_t n = l.arg<int32_t>(4);
  if (n < 1 || l.shared_mem_bytes != static_cast<uint64_t>(16 * n))
    return fail("test_finish: shared memory " + std::to_string(l.shared_mem_bytes) + " for n " + std::to_string(n));
  if (k < 0) return fail("test_finish: negative k");
  for (int32_t i = 0; i < n; ++i) {
    out[i] = tmp[i] + k;
    kv[i] += 1;
  }
  return {};
}

/// n (an i32 param), or 0 when negative (the kernels reject it).
uint64_t count(const cpu::CpuLaunch& l, size_t index) {
  const int32_t n = l.arg<int32_t>(index);
  return n < 0 ? 0 : static_cast<uint64_t>(n);
}

Status add_bias_extents(const cpu::CpuLaunch& l, cpu::CpuExtents& e) {
  const uint64_t n = count(l, 3);
  e.touch(0, "ids", 8 * n);
  e.touch(1, "bias", 8 * std::min<uint64_t>(n, 4));
  e.touch(2, "acc", 8 * n);
  return {};
}

Status double_extents(const cpu::CpuLaunch& l, cpu::CpuExtents& e) {
  const uint64_t n = count(l, 2);
  e.touch(0, "acc", 8 * n);
  e.touch(1, "tmp", 8 * n);
  return {};
}

Status finish_extents(const cpu::CpuLaunch& l, cpu::CpuExtents& e) {
  const uint64_t n = count(l, 4);
  e.touch(0, "tmp", 8 * n);
  e.touch(1, "out", 8 * n);
  e.touch(2, "kv", 8 * n);
  return {};
}

constexpr cpu::CpuKernel kAddBias{&add_bias, &add_bias_extents};
constexpr cpu::CpuKernel kDouble{&double_it, &double_extents};
constexpr cpu::CpuKernel kFinish{&finish, &finish_extents};

}  // namespace

const cpu::CpuKernel* fake_kernel(std::string_view symbol) {
  if (symbol == "test_add_bias") return &kAddBias;
  if (symbol == "test_double") return &kDouble;
  if (symbol == "test_finish") return &kFinish;
  return nullptr;
}

}  // namespace kern::test
