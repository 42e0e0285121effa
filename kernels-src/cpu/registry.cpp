// find_cpu_kernel: the static registry from cubin symbol / extern op name
// (docs/kernels.md) to cpu reference kernel. Looked up on the cold path
// (kern-load binds every step once at load), so a linear scan is enough.
#include <array>
#include <utility>

#include "common/extern_ops.h"
#include "kernels-src/cpu/cpu_kernel.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {

using detail::guarded;

/// One registry row: a symbol and its kernel. CpuKernel's consteval
/// constructor rejects a missing extent declaration at compile time.
struct Entry {
  std::string_view symbol;
  CpuKernel kernel;
};

// Each kernel is wrapped by guarded<> (kernel_args.h): no exception escapes.
constexpr std::array<Entry, 39> kRegistry = {{
    {"kern_embedding_bf16", {guarded<embedding_bf16>, embedding_bf16_extents}},
    {"kern_rmsnorm_bf16", {guarded<rmsnorm_bf16>, rmsnorm_bf16_extents}},
    {"kern_add_rmsnorm_bf16", {guarded<add_rmsnorm_bf16>, add_rmsnorm_bf16_extents}},
    {"kern_head_rmsnorm_bf16", {guarded<head_rmsnorm_bf16>, head_rmsnorm_bf16_extents}},
    {"kern_rope_bf16", {guarded<rope_bf16>, rope_bf16_extents}},
    {"kern_silu_and_mul_bf16", {guarded<silu_and_mul_bf16>, silu_and_mul_bf16_extents}},
    {"kern_bias_add_bf16", {guarded<bias_add_bf16>, bias_add_bf16_extents}},
    {"kern_reshape_and_cache_bf16", {guarded<reshape_and_cache_bf16>, reshape_and_cache_bf16_extents}},
    {"kern_paged_attention_partial_bf16",
     {guarded<paged_attention_partial_bf16>, paged_attention_partial_bf16_extents}},
    {"kern_paged_attention_reduce_bf16",
     {guarded<paged_attention_reduce_bf16>, paged_attention_reduce_bf16_extents}},
    {"kern_paged_attention_prefill_bf16",
     {guarded<paged_attention_prefill_bf16>, paged_attention_prefill_bf16_extents}},
    {"kern_paged_attention_noncausal_bf16",
     {guarded<paged_attention_noncausal_bf16>, paged_attention_prefill_bf16_extents}},
    {"kern_argmax_partial_bf16", {guarded<argmax_partial_bf16>, argmax_partial_bf16_extents}},
    {"kern_argmax_reduce", {guarded<argmax_reduce>, argmax_reduce_extents}},
    {"kern_gemv_bf16", {guarded<gemv_bf16>, gemv_bf16_extents}},
    {"kern_gemv_acc_bf16", {guarded<gemv_acc_bf16>, gemv_bf16_extents}},
    {"kern_gemv_residual_bf16", {guarded<gemv_residual_bf16>, gemv_residual_bf16_extents}},
    {"kern_gemv_silu_mul_bf16", {guarded<gemv_silu_mul_bf16>, gemv_silu_mul_bf16_extents}},
    {"kern_gemv_rmsnorm_bf16", {guarded<gemv_rmsnorm_bf16>, gemv_rmsnorm_bf16_extents}},
    {"kern_gemv_rmsnorm_silu_mul_bf16", {guarded<gemv_rmsnorm_silu_mul_bf16>, gemv_rmsnorm_silu_mul_bf16_extents}},
    {"kern_gemv_rmsnorm_argmax_bf16", {guarded<gemv_rmsnorm_argmax_bf16>, gemv_rmsnorm_argmax_bf16_extents}},
    {"kern_qk_norm_rope_cache_bf16", {guarded<qk_norm_rope_cache_bf16>, qk_norm_rope_cache_bf16_extents}},
    {"kern_attention_decode_bf16", {guarded<attention_decode_bf16>, attention_decode_bf16_extents}},
    {"kern_decode_advance", {guarded<decode_advance>, decode_advance_extents}},
    {"kern_sample_bf16", {guarded<sample_bf16>, sample_bf16_extents}},
    {"kern_last_row", {guarded<last_row>, last_row_extents}},
    {"kern_attention_decode_batch_bf16",
     {guarded<attention_decode_batch_bf16>, attention_decode_batch_bf16_extents}},
    {"kern_attention_decode_qkv_bf16", {guarded<attention_decode_qkv_bf16>, attention_decode_qkv_bf16_extents}},
    {"kern_attention_decode_batch_qkv_bf16",
     {guarded<attention_decode_batch_qkv_bf16>, attention_decode_batch_qkv_bf16_extents}},
    {"kern_decode_advance_batch", {guarded<decode_advance_batch>, decode_advance_batch_extents}},
    {"kern_moe_router_bf16", {guarded<moe_router_bf16>, moe_router_bf16_extents}},
    {"kern_moe_gate_up_bf16", {guarded<moe_gate_up_bf16>, moe_gate_up_bf16_extents}},
    {"kern_moe_down_bf16", {guarded<moe_down_bf16>, moe_down_bf16_extents}},
    {extern_op_symbol(ExternOpId::kGemmBf16Tn), {guarded<gemm_bf16_tn>, gemm_bf16_tn_extents}},
    {extern_op_symbol(ExternOpId::kGemmBf16TnAcc), {guarded<gemm_bf16_tn_acc>, gemm_bf16_tn_extents}},
    {extern_op_symbol(ExternOpId::kGemmBf16TnSplitK), {guarded<gemm_bf16_tn_splitk>, gemm_bf16_tn_splitk_extents}},
    {extern_op_symbol(ExternOpId::kGemmBf16TnSplitKF32),
     {guarded<gemm_bf16_tn_splitk_f32>, gemm_bf16_tn_splitk_f32_extents}},
    {extern_op_symbol(ExternOpId::kAllReduceSumF32), {guarded<allreduce_sum_f32>, allreduce_sum_f32_extents}},
    {extern_op_symbol(ExternOpId::kAllReduceSumF32Bf16),
     {guarded<allreduce_sum_f32_bf16>, allreduce_sum_f32_bf16_extents}},
}};

}  // namespace

const CpuKernel* find_cpu_kernel(std::string_view symbol) {
  for (const Entry& e : kRegistry) {
    if (e.symbol == symbol) return &e.kernel;
  }
  return nullptr;
}

}  // namespace kern::cpu
