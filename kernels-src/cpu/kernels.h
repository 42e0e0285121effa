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

/// `kern_argmax_partial_bf16` (§9, step 1): per (row, chunk) the largest
/// non-NaN logit and its smallest index; an empty chunk writes
/// (-inf, INT32_MAX). Grid = [num_chunks, >= rows, 1].
Status argmax_partial_bf16(const CpuLaunch& launch);

/// `kern_argmax_reduce` (§9, step 2): per row the best (value, index) pair
/// over the chunks (ties -> smallest index) as an i64. Grid.x >= rows.
Status argmax_reduce(const CpuLaunch& launch);

/// `extern:cublaslt_bf16_tn` (§10): c[m, n] = bf16(a[m, k] . w[n, k]^T), f32
/// accumulation. Grid and block are ignored.
Status gemm_bf16_tn(const CpuLaunch& launch);

/// `extern:cublaslt_bf16_tn_acc` (§10): c = bf16(c + a . w^T), the old c
/// added in f32 before the single rounding. Grid and block are ignored.
Status gemm_bf16_tn_acc(const CpuLaunch& launch);

// Extent declarations (CpuExtentFn), one per kernel above.
Status embedding_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status rmsnorm_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status add_rmsnorm_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status head_rmsnorm_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status rope_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status silu_and_mul_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status reshape_and_cache_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status paged_attention_partial_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status paged_attention_reduce_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status paged_attention_prefill_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status argmax_partial_bf16_extents(const CpuLaunch& launch, CpuExtents& out);
Status argmax_reduce_extents(const CpuLaunch& launch, CpuExtents& out);
/// Both GEMM ops (the _acc variant touches the same bytes).
Status gemm_bf16_tn_extents(const CpuLaunch& launch, CpuExtents& out);

}  // namespace kern::cpu
