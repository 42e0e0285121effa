// find_cpu_kernel: the static registry from cubin symbol / extern op name
// (docs/kernels.md) to cpu reference kernel. Looked up on the cold path
// (kern-load binds every step once at load), so a linear scan is enough.
#include <array>
#include <utility>

#include "kernels-src/cpu/cpu_kernel.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"

namespace kern::cpu {

namespace {

using detail::guarded;

// Each entry is wrapped by guarded<> (kernel_args.h): no exception escapes.
constexpr std::array<std::pair<std::string_view, CpuKernelFn>, 14> kRegistry = {{
    {"kern_embedding_bf16", guarded<embedding_bf16>},
    {"kern_rmsnorm_bf16", guarded<rmsnorm_bf16>},
    {"kern_add_rmsnorm_bf16", guarded<add_rmsnorm_bf16>},
    {"kern_head_rmsnorm_bf16", guarded<head_rmsnorm_bf16>},
    {"kern_rope_bf16", guarded<rope_bf16>},
    {"kern_silu_and_mul_bf16", guarded<silu_and_mul_bf16>},
    {"kern_reshape_and_cache_bf16", guarded<reshape_and_cache_bf16>},
    {"kern_paged_attention_partial_bf16", guarded<paged_attention_partial_bf16>},
    {"kern_paged_attention_reduce_bf16", guarded<paged_attention_reduce_bf16>},
    {"kern_paged_attention_prefill_bf16", guarded<paged_attention_prefill_bf16>},
    {"kern_argmax_partial_bf16", guarded<argmax_partial_bf16>},
    {"kern_argmax_reduce", guarded<argmax_reduce>},
    {"extern:cublaslt_bf16_tn", guarded<gemm_bf16_tn>},
    {"extern:cublaslt_bf16_tn_acc", guarded<gemm_bf16_tn_acc>},
}};

}  // namespace

CpuKernelFn find_cpu_kernel(std::string_view symbol) {
  for (const auto& [name, fn] : kRegistry) {
    if (name == symbol) return fn;
  }
  return nullptr;
}

}  // namespace kern::cpu
