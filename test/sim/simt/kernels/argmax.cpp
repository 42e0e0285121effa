// kernels-src/cuda/argmax.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/argmax.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(argmax) {
  KERN_SIM_KERNEL(argmax, kern_argmax_partial_bf16);
  KERN_SIM_KERNEL(argmax, kern_argmax_reduce);
}
