// kernels-src/cuda/silu_and_mul.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/silu_and_mul.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(silu_and_mul) {
  KERN_SIM_KERNEL(silu_and_mul, kern_silu_and_mul_bf16);
}
