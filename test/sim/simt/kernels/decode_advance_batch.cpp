// kernels-src/cuda/decode_advance_batch.cu compiled unchanged as host code for the SIMT
// emulator, and its entry points registered (sim_api.h find_kernel).
#include "test/sim/simt/simt_shim.h"

#include "kernels-src/cuda/decode_advance_batch.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(decode_advance_batch) {
  KERN_SIM_KERNEL(decode_advance_batch, kern_decode_advance_batch);
}
