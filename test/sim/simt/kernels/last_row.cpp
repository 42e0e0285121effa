// kernels-src/cuda/last_row.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/last_row.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(last_row) {
  KERN_SIM_KERNEL(last_row, kern_last_row);
}
