// kernels-src/cuda/paged_attention.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/paged_attention.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(paged_attention) {
  KERN_SIM_KERNEL(paged_attention, kern_paged_attention_prefill_bf16);
  KERN_SIM_KERNEL(paged_attention, kern_paged_attention_noncausal_bf16);
  KERN_SIM_KERNEL(paged_attention, kern_paged_attention_partial_bf16);
  KERN_SIM_KERNEL(paged_attention, kern_paged_attention_reduce_bf16);
  KERN_SIM_KERNEL(paged_attention, kern_attention_decode_bf16);
  KERN_SIM_KERNEL(paged_attention, kern_attention_decode_qkv_bf16);
}
