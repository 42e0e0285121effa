// kernels-src/cuda/attention_decode_batch.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/attention_decode_batch.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(attention_decode_batch) {
  KERN_SIM_KERNEL(attention_decode_batch, kern_attention_decode_batch_bf16);
  KERN_SIM_KERNEL(attention_decode_batch, kern_attention_decode_batch_qkv_bf16);
}
