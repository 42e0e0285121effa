// launch_kernel (cuda_launch.h): cuLaunchKernel, or cuLaunchKernelEx with the
// programmatic stream serialization attribute for PDL steps.
#include "kern-load/cuda/cuda_launch.h"

namespace kern::load::cuda {

CUresult launch_kernel(const DriverApi& api, CUfunction fn, const LaunchDims& dims, CUstream stream,
                       void** kernel_params, bool pdl) {
  if (!pdl) {
    return api.cuLaunchKernel(fn, dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0], dims.block[1],
                              dims.block[2], dims.shared_mem_bytes, stream, kernel_params, nullptr);
  }
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = dims.grid[0];
  config.gridDimY = dims.grid[1];
  config.gridDimZ = dims.grid[2];
  config.blockDimX = dims.block[0];
  config.blockDimY = dims.block[1];
  config.blockDimZ = dims.block[2];
  config.sharedMemBytes = dims.shared_mem_bytes;
  config.hStream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return api.cuLaunchKernelEx(&config, fn, kernel_params, nullptr);
}

}  // namespace kern::load::cuda
