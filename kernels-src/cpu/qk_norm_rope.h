// One head's Qwen3 q/k RMSNorm + RoPE as kern_qk_norm_rope_cache_bf16
// computes it (docs/kernels.md §12), shared by that kernel's cpu twin and the
// twins of the decode attention kernels that fold it in (§13a, §15a), so the
// fused and the two-launch paths give the same bits.
#pragma once

#include <cstdint>

namespace kern::cpu::detail {

/// The u8 rope_flags param of the q/k kernels (docs/kernels.md §12, §13a,
/// §15a): bit 0 neox pairs (else interleaved), bit 1 no q/k RMSNorm (the
/// head is rotated as read, the norm weights are not read); other bits are
/// refused.
constexpr uint8_t kRopeNeox = 1, kRopeNoQkNorm = 2, kRopeFlagsKnown = 3;

/// out[0, d) = bf16(rotate(bf16(x * rsqrt(mean(x^2) + eps) * w))) as f32 (each
/// a bf16 value) for the d bf16 of `x` (d even), rotated by the cos/sin row
/// `cs` (cos [0, d/2) | sin [0, d/2)): neox pairs (i, i + d/2) or interleaved
/// (2i, 2i + 1). The sum of squares is in index order. With `w` null there is
/// no norm: out = bf16(rotate(x)) (rope_flags bit 1).
void norm_rope_head(const uint16_t* x, const uint16_t* w, const float* cs, int64_t d, float eps, bool neox,
                    float* out);

}  // namespace kern::cpu::detail
