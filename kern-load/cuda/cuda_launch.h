// Kernel launches of the cuda device, with or without programmatic
// dependent launch (PDL, docs/gpu.md "Programmatic dependent launch").
// Separate from CudaDevice so that a test can drive it with a fake driver
// table (test/gpu/cuda_device_test.cpp).
#pragma once

#include "kern-load/cuda/cuda_driver.h"
#include "kern-load/device.h"

namespace kern::load::cuda {

/// Compute capability major version from which PDL exists (Hopper, sm_90).
inline constexpr int kPdlMinCcMajor = 9;

/// Whether a step launches with PDL: the manifest step says `"pdl": true`,
/// the device has compute capability >= 9.0 and PDL is `enabled`
/// (CudaDeviceOptions::pdl, kern-run --no-pdl). Otherwise the step
/// launches plainly: its kernel's griddepcontrol instructions are then
/// no-ops (the previous launch has completed before it starts).
inline bool use_pdl(bool step_pdl, int cc_major, bool enabled = true) {
  return enabled && step_pdl && cc_major >= kPdlMinCcMajor;
}

/// Launches `fn` on `stream` with `dims` and `kernel_params`. With `pdl`,
/// through cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
/// set, so the kernel may start while the previous kernel on the stream is
/// still running (it waits in griddepcontrol.wait before reading that
/// kernel's results); under stream capture this records a programmatic graph
/// edge. Without, through cuLaunchKernel. Returns the driver's result.
CUresult launch_kernel(const DriverApi& api, CUfunction fn, const LaunchDims& dims, CUstream stream,
                       void** kernel_params, bool pdl);

}  // namespace kern::load::cuda
