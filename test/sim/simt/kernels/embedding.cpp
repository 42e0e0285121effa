// kernels-src/cuda/embedding.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/embedding.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(embedding) {
  KERN_SIM_KERNEL(embedding, kern_embedding_bf16);
}
