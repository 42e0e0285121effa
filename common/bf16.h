// bf16 <-> f32 conversion (header-only). bf16 is the upper 16 bits of an
// IEEE-754 binary32: 1 sign bit, 8 exponent bits, 7 explicit mantissa bits.
// Values are passed as their raw bit pattern (`uint16_t`), the way bf16
// tensors are stored in safetensors files, the KV cache and kernel buffers.
//
// The rounding matches CUDA's `__float2bfloat16_rn` and PyTorch's
// `torch.bfloat16` cast: round to nearest, ties to even; +-inf and +-0 are
// kept; a NaN stays a NaN (made quiet, sign and upper payload kept), never
// rounded into an infinity. Subnormals are handled like any other value (no
// flush to zero).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace kern {

/// Widens a bf16 bit pattern to the f32 it denotes. Exact (every bf16 value
/// is an f32 value); a signalling NaN is returned unchanged (bit-for-bit).
inline float bf16_to_f32(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

/// Rounds an f32 to the nearest bf16 (ties to even) and returns its bit
/// pattern. NaN -> a quiet NaN with the same sign and upper payload
/// (bit 6 of the result set); +-inf -> +-inf; a finite value beyond the
/// largest bf16 (~3.39e38) rounds to +-inf as IEEE rounding prescribes.
inline uint16_t f32_to_bf16(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: truncate and force the quiet bit
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  }
  // Adding 0x7fff plus the lowest kept bit carries into the kept bits exactly
  // when the dropped half is above one half, or exactly one half with an odd
  // kept part: round to nearest, ties to even. A carry out of the mantissa
  // bumps the exponent, which is the correct result (up to +-inf).
  const uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
}

/// Rounds `x` to bf16 precision and returns it as an f32 (f32 -> bf16 -> f32).
inline float round_to_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }

/// Widens `count` bf16 values from `src` into `dst` (both hold `count`
/// elements; they must not overlap).
inline void bf16_to_f32_n(const uint16_t* src, float* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(src[i]);
}

}  // namespace kern
