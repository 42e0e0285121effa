// Deterministic random weights without a file (`kern-run --random-weights
// SEED`): every `weight` buffer of a plan is filled on the device with
// values drawn from a counter-free xorshift stream seeded by (seed, buffer
// name), so a buffer's values depend only on the seed, its name and size,
// never on the plan's buffer order or the machine. For benchmarks at full
// model geometry (speed does not depend on values) and tests; generating on
// the host runs at several GB/s, far faster than writing a safetensors file.
//
// Values (bf16 stored with round-to-nearest-even, f32 as is):
//   bf16, one dimension (norm weights):    1 + U(-0.1, 0.1)
//   bf16, two or more dimensions (matmul):  U(-a, a), a = sqrt(3 / fan_in),
//                                           fan_in = the last dimension (unit-variance outputs)
//   f32 with one element (k_scale, v_scale): 1.0
//   f32 otherwise (the rope cos/sin cache):  U(-1, 1)
//   any other dtype: left zero (allocations are zero-filled)
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/plan_format.h"
#include "common/result.h"
#include "kern-load/device.h"

namespace kern::load {

/// Fills weight buffer values for `name` (dtype `dtype`, shape `shape`) into
/// `out` (size = element count x element size, bytes), starting at element
/// `first` (so a buffer can be generated in chunks with the same result).
/// Pure function; the value rules are in the file comment.
void random_weight_values(uint64_t seed, std::string_view name, plan::DType dtype, std::span<const uint64_t> shape,
                          uint64_t first, std::span<uint8_t> out);

/// Fills every `weight` buffer of `p` at `buffer_addresses` (indexed like
/// Plan.buffers) on `device` with random_weight_values, in chunks of at most
/// 8 MiB, up to 16 generated at once on their own threads (the values do not
/// depend on it) and copied in order. Returns the bytes written. `progress` (may be null) is called after
/// each buffer with (bytes so far, total weight bytes). Device errors get the
/// buffer's name as context.
Result<uint64_t> fill_random_weights(const plan::Plan& p, uint64_t seed, Device& device,
                                     std::span<const DevicePtr> buffer_addresses,
                                     const std::function<void(uint64_t, uint64_t)>* progress = nullptr);

}  // namespace kern::load
