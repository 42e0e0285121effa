// Choosing the device for `--device auto|cpu|cuda` (SPEC §10): the CUDA
// driver is probed with dlopen("libcuda.so.1") at run time, never linked, so
// every binary runs on machines without a GPU.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "kern-load/device.h"

namespace kern::load {

/// What the user asked for.
enum class DeviceChoice { kAuto, kCpu, kCuda };

/// Parses "auto", "cpu" or "cuda"; an error (kUsage) naming the value otherwise.
Result<DeviceChoice> parse_device_choice(std::string_view s);

/// Probes the CUDA driver: libcuda.so.1 found as cuda/library_search.h says
/// (open_cuda_driver), cuInit(0), cuDeviceGetCount. Returns the device count
/// (may be 0), or an error (kDevice) "no CUDA driver: dlopen libcuda.so.1
/// failed: <dlerror>; ..." (every path tried) /
/// "cuInit failed: error N".
Result<int> probe_cuda_devices();

/// Creates the device for `choice`. kAuto picks cuda when probe_cuda_devices
/// reports >= 1 device and the cuda device can be created, else cpu, and
/// writes the reason for falling back to
/// `*note` ("no CUDA device (...); using the cpu reference device"); kCuda
/// without a driver or device is an error; kCpu is make_cpu_device().
/// `cuda` configures the cuda device when one is created.
Result<std::unique_ptr<Device>> select_device(DeviceChoice choice, std::string* note,
                                              const CudaDeviceOptions& cuda = {});

}  // namespace kern::load
