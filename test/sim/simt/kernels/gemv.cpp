// kernels-src/cuda/gemv.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/gemv.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(gemv) {
  KERN_SIM_KERNEL(gemv, kern_gemv_bf16);
  KERN_SIM_KERNEL(gemv, kern_gemv_acc_bf16);
  KERN_SIM_KERNEL(gemv, kern_gemv_residual_bf16);
  KERN_SIM_KERNEL(gemv, kern_gemv_silu_mul_bf16);
  KERN_SIM_KERNEL(gemv, kern_gemv_rmsnorm_bf16);
  KERN_SIM_KERNEL(gemv, kern_gemv_rmsnorm_silu_mul_bf16);
  KERN_SIM_KERNEL(gemv, kern_gemv_rmsnorm_argmax_bf16);
}
