// The mixture-of-experts kernels' arithmetic order (docs/kernels.md §18),
// written once for the cpu twin (moe.cpp); the CUDA kernels
// (kernels-src/cuda/moe.cu) do the same operations in the same order, so
// the emulated GPU gives the twin's bits.
#pragma once

#include <cmath>
#include <cstdint>

namespace kern::cpu {

/// Lanes of a dot product (a warp): lane l sums the 8-element groups
/// l, l + 32, ... (kMoeGroup elements each, in order).
constexpr int kMoeLanes = 32;
constexpr int kMoeGroup = 8;
/// Output columns per 128-thread block of the expert GEMVs (a warp each).
constexpr int64_t kMoeColsPerBlock = 4;
/// The router's logits live in shared memory: at most this many experts.
constexpr int64_t kMoeMaxExperts = 1024;

/// The warp's xor butterfly over 32 lane sums (offsets 16, 8, 4, 2, 1):
/// every lane ends with the same bits (f32 addition commutes); lane 0's.
inline float butterfly_sum(float lanes[kMoeLanes]) {
  for (int o = kMoeLanes / 2; o >= 1; o /= 2) {
    float next[kMoeLanes];
    for (int l = 0; l < kMoeLanes; ++l) next[l] = lanes[l] + lanes[l ^ o];
    for (int l = 0; l < kMoeLanes; ++l) lanes[l] = next[l];
  }
  return lanes[0];
}

/// One row's routing from its f32 router logits [experts]: softmax in f32
/// (max, then the sum of exp(l - max) in index order), the top_k greatest
/// probabilities in descending order, ties to the lower expert index (as a
/// stable sort; a NaN probability never beats a number), then, with
/// `normalize` (Qwen3-MoE's norm_topk_prob), each weight divided by their
/// sum (added in selection order). Writes weights[top_k] and ids[top_k].
/// HF transformers Qwen3MoeSparseMoeBlock; llama.cpp build_moe_ffn.
inline void route_row(const float* logits, int experts, int top_k, bool normalize, float* weights, int32_t* ids) {
  float m = logits[0];
  for (int e = 1; e < experts; ++e) m = logits[e] > m ? logits[e] : m;
  float sum = 0.0f;
  for (int e = 0; e < experts; ++e) sum += std::exp(logits[e] - m);
  for (int j = 0; j < top_k; ++j) {
    int best = -1;
    float best_p = 0.0f;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int i = 0; i < j; ++i) taken = taken || ids[i] == e;
      if (taken) continue;
      const float p = std::exp(logits[e] - m) / sum;
      if (best < 0 || p > best_p) best = e, best_p = p;
    }
    ids[j] = best;
    weights[j] = best_p;
  }
  if (!normalize) return;
  float total = 0.0f;
  for (int j = 0; j < top_k; ++j) total += weights[j];
  for (int j = 0; j < top_k; ++j) weights[j] = weights[j] / total;
}

}  // namespace kern::cpu
