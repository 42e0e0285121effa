// Choosing the device for --device auto|cpu|cuda (device_select.h).
#include "kern-load/device_select.h"

#include <dlfcn.h>

#include "kern-load/cpu_device.h"
#include "kern-load/cuda/library_search.h"

namespace kern::load {

Result<DeviceChoice> parse_device_choice(std::string_view s) {
  if (s == "auto") return DeviceChoice::kAuto;
  if (s == "cpu") return DeviceChoice::kCpu;
  if (s == "cuda") return DeviceChoice::kCuda;
  return make_error(ErrorKind::kUsage, "unknown device '" + std::string(s) + "' (expected auto, cpu or cuda)");
}

Result<int> probe_cuda_devices() {
  // The same search as the cuda device's (library_search.h); RTLD_LOCAL: the
  // cuda backend opens its own handle, this one is only a probe.
  auto opened = cuda::open_cuda_driver();
  if (!opened.ok()) return make_error(ErrorKind::kDevice, "no CUDA driver: " + opened.error().message);
  void* lib = opened.value().handle;
  // cuInit and cuDeviceGetCount have no versioned variants (cuda.h).
  using CuInit = int (*)(unsigned int);
  using CuDeviceGetCount = int (*)(int*);
  auto cu_init = reinterpret_cast<CuInit>(dlsym(lib, "cuInit"));
  auto cu_count = reinterpret_cast<CuDeviceGetCount>(dlsym(lib, "cuDeviceGetCount"));
  Result<int> result = make_error(ErrorKind::kDevice, "libcuda.so.1 lacks cuInit or cuDeviceGetCount");
  if (cu_init != nullptr && cu_count != nullptr) {
    int rc = cu_init(0);
    int count = 0;
    if (rc != 0) {
      result = make_error(ErrorKind::kDevice, "cuInit failed: CUDA error " + std::to_string(rc));
    } else if ((rc = cu_count(&count)) != 0) {
      result = make_error(ErrorKind::kDevice, "cuDeviceGetCount failed: CUDA error " + std::to_string(rc));
    } else {
      result = count;
    }
  }
  // Not dlclosed: libcuda is not meant to be unloaded once cuInit ran (its
  // threads and exit handlers stay), and the cuda device opens the same
  // library again (a second reference, not a second copy).
  return result;
}

Result<std::unique_ptr<Device>> select_device(DeviceChoice choice, std::string* note,
                                              const CudaDeviceOptions& cuda_options) {
  if (choice == DeviceChoice::kCpu) return make_cpu_device();
  auto count = probe_cuda_devices();
  if (choice == DeviceChoice::kCuda) {
    KERN_RETURN_IF_ERROR(count);
    if (*count < 1) return make_error(ErrorKind::kDevice, "the CUDA driver reports no devices");
    return make_cuda_device(cuda_options);
  }
  std::string why;
  if (count.ok() && *count >= 1) {
    auto cuda = make_cuda_device(cuda_options);
    if (cuda.ok()) return cuda;
    why = cuda.error().message;
  } else {
    why = count.ok() ? std::string("the CUDA driver reports no devices") : count.error().message;
  }
  if (note != nullptr) *note = "no usable CUDA device (" + why + "); using the cpu reference device";
  return make_cpu_device();
}

}  // namespace kern::load
