// The q . k dots of the decode attention twins (attention_decode_batch.cpp,
// paged_attention.cpp): each position's dot accumulates q[d] * k[d] in d
// order, one f32 multiply then one add per element, as the twins always
// have. One dot's adds form a chain (about four cycles each), so
// kQkWays positions run interleaved: their chains overlap and each
// position's bits stay those of the one-at-a-time loop.
#pragma once

#include <cstdint>

#include "common/bf16.h"

namespace kern::cpu {

/// Positions whose dots run interleaved in qk_dots.
inline constexpr int kQkWays = 8;

/// dots[p - begin] = sum over d < head_dim of q[d] * k_p[d] (bf16 widened
/// to f32; multiply, then add, in d order from 0.0f), for p in [begin,
/// end), k_p = key(p) (head_dim bf16 values). `dots` holds end - begin
/// floats.
template <typename KeyFn>
void qk_dots(const uint16_t* q, int64_t head_dim, int64_t begin, int64_t end, KeyFn&& key, float* dots) {
  int64_t p = begin;
  for (; p + kQkWays <= end; p += kQkWays) {
    const uint16_t* k[kQkWays];
    float acc[kQkWays];
    for (int j = 0; j < kQkWays; ++j) {
      k[j] = key(p + j);
      acc[j] = 0.0f;
    }
    for (int64_t d = 0; d < head_dim; ++d) {
      const float qd = bf16_to_f32(q[d]);
      for (int j = 0; j < kQkWays; ++j) acc[j] += qd * bf16_to_f32(k[j][d]);
    }
    for (int j = 0; j < kQkWays; ++j) dots[p + j - begin] = acc[j];
  }
  for (; p < end; ++p) {
    const uint16_t* k = key(p);
    float acc = 0.0f;
    for (int64_t d = 0; d < head_dim; ++d) acc += bf16_to_f32(q[d]) * bf16_to_f32(k[d]);
    dots[p - begin] = acc;
  }
}

}  // namespace kern::cpu
