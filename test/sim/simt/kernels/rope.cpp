// kernels-src/cuda/rope.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/rope.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(rope) {
  KERN_SIM_KERNEL(rope, kern_rope_bf16);
}
