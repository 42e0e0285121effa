// kernels-src/cuda/moe.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/moe.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(moe) {
  KERN_SIM_KERNEL(moe, kern_moe_router_bf16);
  KERN_SIM_KERNEL(moe, kern_moe_gate_up_bf16);
  KERN_SIM_KERNEL(moe, kern_moe_down_bf16);
}
