// kern_silu_and_mul_bf16 (docs/kernels.md §6): the SwiGLU activation of a
// fused gate_up row [gate (d) | up (d)]: out = bf16(silu(gate) * up) with
// silu(g) = g / (1 + exp(-g)), all in f32 (silu is not rounded on its own).
#include <cmath>

#include "common/bf16.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/parallel.h"

namespace kern::cpu {

namespace {
constexpr const char* kName = "kern_silu_and_mul_bf16";
constexpr int64_t kExpWork = 16;  // an element's exp and divide, in cpu_threads' multiply-adds
}  // namespace

Status silu_and_mul_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 4));
  int64_t tokens = 0, d = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 2, "num_tokens", 0, tokens));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 3, "d", 0, d));
  const bool work = tokens > 0 && d > 0;
  const uint16_t* gate_up = nullptr;
  uint16_t* out = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "gate_up", work, gate_up));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "out", work, out));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, tokens, "one block per token"));
  if (!work) return Status::ok_status();

  // Rows over the cores (a prefill's: an exp per element); each row alone.
  run_ranges(tokens, cpu_threads(tokens * d * kExpWork, tokens), [&](unsigned, int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const uint16_t* gate = gate_up + t * 2 * d;
      const uint16_t* up = gate + d;
      uint16_t* o = out + t * d;
      for (int64_t j = 0; j < d; ++j) {
        const float g = bf16_to_f32(gate[j]);
        o[j] = f32_to_bf16(g / (1.0f + std::exp(-g)) * bf16_to_f32(up[j]));
      }
    }
  });
  return Status::ok_status();
}

Status silu_and_mul_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t tokens = size_i32(l, 2), d = size_i32(l, 3);
  if (tokens == 0 || d == 0) return Status::ok_status();
  e.touch(0, "gate_up", sat_product({tokens, d, 2, 2}));
  e.touch(1, "out", sat_product({tokens, d, 2}));
  return Status::ok_status();
}


}  // namespace kern::cpu
