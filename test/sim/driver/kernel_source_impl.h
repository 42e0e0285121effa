// The kernel sources behind kernel_source.h, one per file.
#pragma once

#include "test/sim/driver/kernel_source.h"

namespace kern::sim {

/// kernel_source_twins.cpp: the cpu reference kernel of `symbol`, or nullptr.
const EmulatedKernel* find_twin_kernel(std::string_view symbol);

#if KERN_SIM_HAVE_SIMT
/// kernel_source_simt.cpp: the SIMT emulation of `symbol`, or nullptr.
const EmulatedKernel* find_simt_kernel(std::string_view symbol);
void simt_shadow_alloc(uint64_t addr, uint64_t bytes);
void simt_shadow_free(uint64_t addr);
void simt_shadow_write(uint64_t addr, uint64_t bytes);
void simt_shadow_launch_write(uint64_t addr, uint64_t bytes);
#endif

}  // namespace kern::sim
