// The deliberately broken test kernels of broken_kernels.cu, by name.
#pragma once

#include <string_view>

#include "test/sim/simt/sim_api.h"

/// The emulated test kernel `name` (e.g. "sim_shared_race"), or nullptr.
const kern::sim::KernelEntry* kern_sim_broken_kernel(std::string_view name);
