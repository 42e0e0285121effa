// kernels-src/cuda/qk_norm_rope_cache.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/qk_norm_rope_cache.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(qk_norm_rope_cache) {
  KERN_SIM_KERNEL(qk_norm_rope_cache, kern_qk_norm_rope_cache_bf16);
}
