// kernels-src/cuda/rmsnorm.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/rmsnorm.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(rmsnorm) {
  KERN_SIM_KERNEL(rmsnorm, kern_rmsnorm_bf16);
  KERN_SIM_KERNEL(rmsnorm, kern_add_rmsnorm_bf16);
  KERN_SIM_KERNEL(rmsnorm, kern_head_rmsnorm_bf16);
}
