// kernels-src/cuda/bias_add.cu compiled unchanged as host code for the SIMT
// emulator, and its entry point registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/bias_add.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(bias_add) {
  KERN_SIM_KERNEL(bias_add, kern_bias_add_bf16);
}
