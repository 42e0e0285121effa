// Fallback definition of make_cuda_device (device.h) used while the cuda
// backend (kern-load/cuda/) is not part of the build. kern-load/meson.build
// drops this file as soon as kern-load/cuda/meson.build defines
// `kern_load_cuda_sources`.
#include "kern-load/device.h"

namespace kern::load {

Result<std::unique_ptr<Device>> make_cuda_device(const CudaDeviceOptions& /*options*/) {
  return make_error(ErrorKind::kDevice,
                    "the cuda device is not built yet (kern-load/cuda/ is missing from this build); "
                    "use --device cpu");
}

}  // namespace kern::load
