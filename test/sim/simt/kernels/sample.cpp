// kernels-src/cuda/sample.cu compiled unchanged as host code for the SIMT
// emulator, and its entry point registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/sample.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(sample) { KERN_SIM_KERNEL(sample, kern_sample_bf16); }
