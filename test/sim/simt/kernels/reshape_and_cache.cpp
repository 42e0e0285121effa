// kernels-src/cuda/reshape_and_cache.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/reshape_and_cache.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(reshape_and_cache) {
  KERN_SIM_KERNEL(reshape_and_cache, kern_reshape_and_cache_bf16);
}
