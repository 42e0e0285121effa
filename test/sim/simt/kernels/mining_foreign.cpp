// The mining test's foreign program kernels (test/mining/foreign/
// foreign_kernels.cu, not kern's) compiled unchanged as host code for the
// SIMT emulator, so that program runs on the simulated GPU too.
#include "test/sim/simt/simt_shim.h"

#include "test/mining/foreign/foreign_kernels.cu"

#include "test/sim/simt/simt_entry.h"

KERN_SIM_FAMILY(mining_foreign) {
  KERN_SIM_KERNEL(mining_foreign, foreign_scale);
  KERN_SIM_KERNEL(mining_foreign, foreign_partial);
  KERN_SIM_KERNEL(mining_foreign, foreign_reduce);
}
