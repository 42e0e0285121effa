// The cpu reference kernels, one function per cubin symbol / extern op of
// docs/kernels.md. Each has exactly the parameter ABI written there and the
// CpuKernelFn signature (cpu_kernel.h); find_cpu_kernel (registry.cpp) maps
// the symbol to the function. Numerics: every kernel reads bf16 as f32, does
// all its math in f32 and rounds to bf16 (nearest even, common/bf16.h) once,
// on the final store.
//
// Errors (never a crash): a wrong param count, a negative size, inconsistent
// sizes or strides, a null pointer that would be dereferenced, or a launch
// grid that does not cover the work (or, for split/chunk counts, does not
// match the param exactly) return an error Status naming the kernel and the
// param.
//
// Extents: each kernel X has X_extents, its CpuExtentFn (cpu_kernel.h): the
// bytes it touches through each pointer param, from its scalar params; the
// registry pairs them and the cpu device checks them against its buffers.
#pragma once

#include "kernels-src/cpu/cpu_kernel.h"

namespace kern::cpu {

/// `kern_embedding_bf16` (docs/kernels.md §1): out[t, :] = table[token_ids[t], :];
/// an id outside [0, vocab) writes a zero row. Grid.x >= num_tokens.
Status embedding_bf16(const CpuLaunch& launch);

/// `kern_rmsnorm_bf16` (§2): y = bf16(x * rsqrt(mean(x^2) + eps) * w) per row
/// of [rows, n]. Grid.x >= rows.
Status rmsnorm_bf16(const CpuLaunch& launch);

/// `kern_add_rmsnorm_bf16` (§3): r = bf16(residual + x); residual = r;
/// y = rmsnorm(r) computed from the rounded r. Grid.x >= rows.
Status add_rmsnorm_bf16(const CpuLaunch& launch);

/// `kern_head_rmsnorm_bf16` (§4): rmsnorm over each head_dim slice of strided
/// token rows. Grid.x * (block.x / 32) >= total_heads (one warp per head).
Status head_rmsnorm_bf16(const CpuLaunch& launch);

/// `kern_rope_bf16` (§5): rotary embedding of q and k in place, neox or
/// interleaved pairs. Grid.x >= num_tokens. A negative position is an error.
Status rope_bf16(const CpuLaunch& launch);

/// `kern_silu_and_mul_bf16` (§6): out = bf16(silu(gate) * up) for rows
/// [gate | up] of [num_tokens, 2d]. Grid.x >= num_tokens.
Status silu_and_mul_bf16(const CpuLaunch& launch);

/// `kern_bias_add_bf16` (§6a): x[r, i] = bf16(x[r, i] + bias[i]) in place for
/// rows r < rows (stride ld elements, ld >= n), i < n. Grid.x >= rows.
Status bias_add_bf16(const CpuLaunch& launch);

/// `kern_reshape_and_cache_bf16` (§7): writes bf16(k / k_scale) and
/// bf16(v / v_scale) of each token into its paged KV-cache slot; a negative
/// slot skips the token. Grid.x >= num_tokens.
Status reshape_and_cache_bf16(const CpuLaunch& launch);

/// `kern_paged_attention_partial_bf16` (§8, decode step 1): per (head, split,
/// query) the split's running max m, exp-sum l and unnormalised weighted sum
/// of v, into f32 scratch. Grid = [>= H, num_splits, >= T].
Status paged_attention_partial_bf16(const CpuLaunch& launch);

/// `kern_paged_attention_reduce_bf16` (§8, decode step 2): combines the
/// splits' (m, l, o) into bf16 out. Grid = [>= H, >= T, 1].
Status paged_attention_reduce_bf16(const CpuLaunch& launch);

/// `kern_paged_attention_prefill_bf16` (§8, prefill): causal paged attention
/// in one step. Grid = [>= H, >= T, 1].
Status paged_attention_prefill_bf16(const CpuLaunch& launch);

/// `kern_paged_attention_noncausal_bf16` (§8, the DFlash draft's attention):
/// the prefill ABI, grid and block; every query row attends to all cache
/// positions [0, seq_lens[0]) (context + the whole block), not causally.
Status paged_attention_noncausal_bf16(const CpuLaunch& launch);

/// `kern_attention_decode_bf16` (§13): decode attention in one launch, the
/// values of partial + reduce with the same splits (partial_o / partial_ml
/// written as there). Grid = [>= KV, num_splits, >= T]; at most 8 query heads
/// per kv head, head_dim <= 512.
Status attention_decode_bf16(const CpuLaunch& launch);

/// `kern_attention_decode_batch_bf16` (§15): batched decode attention, row
/// r over row r of the block tables [B, pages_per_seq] and seq_lens[r]; each
/// row the values of attention_decode_bf16 at one query. Grid = [>= KV,
/// num_splits, >= B]; B <= 8, at most 8 query heads per kv head, head_dim <= 256.
Status attention_decode_batch_bf16(const CpuLaunch& launch);

/// `kern_attention_decode_qkv_bf16` (§13a) and
/// `kern_attention_decode_batch_qkv_bf16` (§15a), one ABI: from the raw qkv
/// projection rows, the q/k RMSNorm + RoPE + KV-cache write of
/// qk_norm_rope_cache_bf16 at each row's position seq_lens[r] - 1, then
/// attention_decode_batch_bf16 over the rows: the two-launch path's bits.
/// Grid = [>= KV, num_splits, >= num_seqs], block [128, 1, 1].
Status attention_decode_qkv_bf16(const CpuLaunch& launch);
Status attention_decode_batch_qkv_bf16(const CpuLaunch& launch);

/// `kern_argmax_partial_bf16` (§9, step 1): per (row, chunk) the largest
/// non-NaN logit and its smallest index; an empty chunk writes
/// (-inf, INT32_MAX). Grid = [num_chunks, >= rows, 1].
Status argmax_partial_bf16(const CpuLaunch& launch);

/// `kern_argmax_reduce` (§9, step 2): per row the best (value, index) pair
/// over the chunks (ties -> smallest index) as an i64. Grid.x >= rows.
Status argmax_reduce(const CpuLaunch& launch);

/// `kern_decode_advance` (§14): feeds next_token[T-1] back into token_ids[0]
/// and advances positions[0] = positions[T-1] + 1, slot_mapping[0] = that
/// position's slot through the block table (-1 outside it), seq_lens[0] += 1.
/// Nothing when num_tokens is 0. Grid.x >= 1.
Status decode_advance(const CpuLaunch& launch);

/// `kern_last_row` (§14a): row 0 of x [rows, row_bytes] = row rows - 1, in
/// place (bytes); nothing for rows <= 1. Grid.x >= 1 when it copies.
Status last_row(const CpuLaunch& launch);

/// `kern_sample_bf16` (§17): for each row with temperature > 0, replaces
/// next_token[r] (the argmax) by an id sampled from softmax(logits / t)
/// truncated by min_p, top_k and top_p, with Philox4x32-10 keyed by
/// (seed[r], positions[r]); other rows are left alone. Grid.x >= rows,
/// block [256, 1, 1]; the histogram state (i32 [max_rows, 65536]) is zero on
/// entry and left zero (a non-zero count at a key the row has is an error);
/// rows > max_rows is an error.
Status sample_bf16(const CpuLaunch& launch);
/// `kern_decode_advance_batch` (§16): per row r with seq_lens[r] > 0,
/// token_ids[r] = next_token[r], positions[r] += 1, slot_mapping[r] = that
/// position's slot through row r of the block tables (-1 outside it or on a
/// negative entry), seq_lens[r] += 1. Grid.x >= ceil(B / 64).
Status decode_advance_batch(const CpuLaunch& launch);

/// `extern:cublaslt_bf16_tn` (§10): c[m, n] = bf16(a[m, k] . w[n, k]^T), f32
/// accumulation. Grid and block are ignored.
Status gemm_bf16_tn(const CpuLaunch& launch);

/// `extern:cublaslt_bf16_tn_acc` (§10): c = bf16(c + a . w^T), the old c
/// added in f32 before the single rounding. Grid and block are ignored.
Status gemm_bf16_tn_acc(const CpuLaunch& launch);

/// `extern:gemm_bf16_tn_splitk` (docs/parallel.md): k is cut into `splits`
/// equal slices (k % splits == 0, splits a power of two); each slice's dot
/// is computed in gemm_bf16_tn's order, and the slice sums are added as a
/// pairwise tree (slices 2i and 2i + 1 first); c[m, n] = bf16(that sum).
/// Params: a [m, k] bf16, w [n, k] bf16, c [m, n] bf16, i32 m, n, k, splits.
Status gemm_bf16_tn_splitk(const CpuLaunch& launch);

/// `extern:gemm_bf16_tn_splitk_f32`: the same sum, left in f32 in c [m, n]
/// (a rank's partial sum before extern:allreduce_sum_f32).
Status gemm_bf16_tn_splitk_f32(const CpuLaunch& launch);

/// `extern:allreduce_sum_f32` (docs/parallel.md): x[count] f32, in place,
/// becomes the sum over the ranks of their x, added as a pairwise tree in
/// rank order (tree_sum_f32) so that every rank gets the same bits.
/// Params: x, i32 count. Needs launch.collective.
Status allreduce_sum_f32(const CpuLaunch& launch);

/// `extern:allreduce_sum_f32_bf16`: allreduce_sum_f32 on x, then y[count] =
/// bf16(x). Params: x f32 (inout), y bf16 (out), i32 count.
Status allreduce_sum_f32_bf16(const CpuLaunch& launch);

/// The sum of v[0 .. count) as a pairwise tree: halves of ceil(count / 2)
/// and the rest, each summed the same way, then added (for a power of two,
/// (v0 + v1) + (v2 + v3) ...). `stride` elements between the values.
float tree_sum_f32(const float* v, size_t count, size_t stride);

/// The decode GEMV family (§11): c[m, n] = epilogue(a'[m, k] . w[n, k]^T) for
/// m <= 8, in the CUDA twin's reduction order (row-invariant: a row does not
/// depend on m). Grid = [>= ceil(n / 8), splits, 1], block [128, 1, 1].
/// kern_gemv_bf16: c = bf16(a . w^T).
Status gemv_bf16(const CpuLaunch& launch);
/// kern_gemv_acc_bf16: c = bf16(c + a . w^T).
Status gemv_acc_bf16(const CpuLaunch& launch);
/// kern_gemv_residual_bf16: c = bf16(residual + a . w^T).
Status gemv_residual_bf16(const CpuLaunch& launch);
/// kern_gemv_silu_mul_bf16: c = bf16(silu(a . gate^T) * (a . up^T)), w [2n, k]
/// = [gate; up] (the fused gate_up_proj layout).
Status gemv_silu_mul_bf16(const CpuLaunch& launch);
/// kern_gemv_rmsnorm_bf16: a' = bf16(rmsnorm(a) * norm_weight); c = bf16(a' . w^T).
/// Shared memory >= m * k * 2.
Status gemv_rmsnorm_bf16(const CpuLaunch& launch);
/// kern_gemv_rmsnorm_silu_mul_bf16: the SiLU*mul epilogue over the RMSNorm prologue.
Status gemv_rmsnorm_silu_mul_bf16(const CpuLaunch& launch);
/// kern_gemv_rmsnorm_argmax_bf16: the RMSNorm variant (lm_head) that also
/// writes each 8-column tile's best (bf16 logit, column) per row.
Status gemv_rmsnorm_argmax_bf16(const CpuLaunch& launch);

/// The w operand of a decode GEMV launch, as its packed copy is keyed
/// (GemvPackedStore): w, its rows (n, or 2n for the SiLU*mul variants), k
/// and splits, and the param indices they are read from.
struct GemvWOperand {
  const uint16_t* w = nullptr;
  int64_t rows = 0, k = 0, splits = 1;
  size_t params[4] = {};  ///< w, n, k, splits
};

/// Whether `symbol` is a decode GEMV kernel (kern_gemv_*), and if so its w
/// operand in `launch` (whose params must be readable; the values are not
/// checked: a launch with invalid ones is refused when it runs). False for
/// any other symbol or a launch with too few params.
bool gemv_w_operand(std::string_view symbol, const CpuLaunch& launch, GemvWOperand& out);

/// `kern_qk_norm_rope_cache_bf16` (§12): head RMSNorm of q and k, neox RoPE,
/// q to q_out and k, v into the paged KV cache, from one fused qkv row per
/// token. Grid = [>= ceil((H + 2 KV) / 4), >= T, 1], block [128, 1, 1].
Status qk_norm_rope_cache_bf16(const CpuLaunch& launch);

/// `kern_moe_router_bf16` (§18, mixture of experts): per row of x [rows, k],
/// the f32 router logits x . w[e] (w [experts, k]), softmax, the top_k
/// experts (ties to the lower index), renormalised when norm_topk_prob:
/// topk_weights f32 [rows, top_k], topk_ids i32 [rows, top_k]. Grid.x >= rows.
Status moe_router_bf16(const CpuLaunch& launch);

/// `kern_moe_gate_up_bf16` (§18): act[r, j] = bf16(silu(x[r] . gate_e) * (x[r] . up_e))
/// over the selected expert e = topk_ids[r, j] only (w [experts, 2n, k]:
/// gate rows, then up rows); act [rows, top_k, n]. Grid [>= ceil(n / 4), >= top_k, >= rows].
Status moe_gate_up_bf16(const CpuLaunch& launch);

/// `kern_moe_down_bf16` (§18): residual[r] = bf16(residual[r] + sum_j
/// topk_weights[r, j] * (act[r, j] . down_e)), j in selection order (w
/// [experts, n, k], act [rows, top_k, k]). Grid [>= ceil(n / 4), >= rows, 1].
Status moe_down_bf16(const CpuLaunch& launch);


// Extent declarations (CpuExtentFn), one per kernel above.
Status embedding_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status rmsnorm_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status add_rmsnorm_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status head_rmsnorm_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status rope_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status silu_and_mul_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status bias_add_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status reshape_and_cache_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status paged_attention_partial_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status paged_attention_reduce_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status paged_attention_prefill_bf16_extents(const CpuLaunch& launch, CpuExtents& out);  // also noncausal
Status argmax_partial_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status argmax_reduce_extents(const CpuLaunch& launch, CpuExtents& out);
Status decode_advance_extents(const CpuLaunch& launch, CpuExtents& out);
Status last_row_extents(const CpuLaunch& launch, CpuExtents& out);
Status sample_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
/// Both GEMM ops (the _acc variant touches the same bytes).
Status gemm_bf16_tn_extents(const CpuLaunch& launch, CpuExtents& out);
Status gemm_bf16_tn_splitk_extents(const CpuLaunch& launch, CpuExtents& out);
Status gemm_bf16_tn_splitk_f32_extents(const CpuLaunch& launch, CpuExtents& out);
Status allreduce_sum_f32_extents(const CpuLaunch& launch, CpuExtents& out);
Status allreduce_sum_f32_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
/// The decode GEMV family (one declaration per variant's param layout).
Status gemv_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status gemv_residual_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status gemv_silu_mul_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status gemv_rmsnorm_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status gemv_rmsnorm_silu_mul_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status gemv_rmsnorm_argmax_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status qk_norm_rope_cache_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status attention_decode_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status attention_decode_batch_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status attention_decode_qkv_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status attention_decode_batch_qkv_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status decode_advance_batch_extents(const CpuLaunch& launch, CpuExtents& out);
Status moe_router_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status moe_gate_up_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status moe_down_bf16_extents(const CpuLaunch& launch, CpuExtents& out);

}  // namespace kern::cpu
