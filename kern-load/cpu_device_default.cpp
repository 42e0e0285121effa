// make_cpu_device lives in its own file so that code using CpuDevice with its
// own resolver (tests with fake kernels) does not link the reference kernels.
#include "kern-load/cpu_device.h"

namespace kern::load {

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(&cpu::find_cpu_kernel); }

}  // namespace kern::load
