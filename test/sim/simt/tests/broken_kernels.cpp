// broken_kernels.cu compiled for the SIMT emulator like the real kernels
// (test/sim/simt/kernels/*.cpp), its entries looked up by the tests by name.
#include "test/sim/simt/simt_shim.h"

#include "test/sim/simt/tests/broken_kernels.cu"

#include "test/sim/simt/simt_entry.h"
#include "test/sim/simt/tests/broken_kernels.h"

#define KERN_SIM_BROKEN(fn) \
  if (name == #fn) return ::kern::sim::entry::Kernel<&fn>::entry(#fn, "broken_kernels");

const kern::sim::KernelEntry* kern_sim_broken_kernel(std::string_view name) {
  KERN_SIM_BROKEN(sim_shared_race)
  KERN_SIM_BROKEN(sim_shared_war)
  KERN_SIM_BROKEN(sim_shared_uninit)
  KERN_SIM_BROKEN(sim_copy_shift)
  KERN_SIM_BROKEN(sim_access_width)
  KERN_SIM_BROKEN(sim_vector_load)
  KERN_SIM_BROKEN(sim_pdl_consumer)
  KERN_SIM_BROKEN(sim_pdl_writer)
  KERN_SIM_BROKEN(sim_no_pdl_wait)
  KERN_SIM_BROKEN(sim_last_block)
  KERN_SIM_BROKEN(sim_barrier_exit)
  KERN_SIM_BROKEN(sim_shuffle_exit)
  KERN_SIM_BROKEN(sim_deadlock)
  KERN_SIM_BROKEN(sim_collectives)
  KERN_SIM_BROKEN(sim_block_order)
  KERN_SIM_BROKEN(sim_dynamic_shared)
  return nullptr;
}
