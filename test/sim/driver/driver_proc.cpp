// The simulated libcuda.so.1's exported symbols: cuGetProcAddress_v2 (how
// kern-load resolves every entry point: the newest variant whose ABI version
// is at most the requested one, as the real driver picks it), the few plain
// symbols the --device auto probe dlsyms, the error strings, and the hooks
// for the simulated cublasLt (sim_hooks.h).
#include <cstring>
#include <vector>

#include "test/sim/driver/driver_api.h"
#include "test/sim/driver/kernel_source.h"
#include "test/sim/driver/sim_hooks.h"

namespace kern::sim::api {

namespace {

/// One ABI variant of an entry point; fn null = a variant that exists in
/// CUDA but is not simulated (asking for it is a caller bug worth seeing).
struct Variant {
  const char* name;
  int version;
  void* fn;
};

#define SIM_FN(f) reinterpret_cast<void*>(&f)
const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"cuGetErrorString", 6000, SIM_FN(cuGetErrorString)},
      {"cuGetErrorName", 6000, SIM_FN(cuGetErrorName)},
      {"cuInit", 2000, SIM_FN(cuInit)},
      {"cuDriverGetVersion", 2020, SIM_FN(cuDriverGetVersion)},
      {"cuDeviceGetCount", 2000, SIM_FN(cuDeviceGetCount)},
      {"cuDeviceGet", 2000, SIM_FN(cuDeviceGet)},
      {"cuDeviceGetName", 2000, SIM_FN(cuDeviceGetName)},
      {"cuDeviceGetAttribute", 2000, SIM_FN(cuDeviceGetAttribute)},
      {"cuDevicePrimaryCtxRetain", 7000, SIM_FN(cuDevicePrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease", 7000, nullptr},
      {"cuDevicePrimaryCtxRelease", 11000, SIM_FN(cuDevicePrimaryCtxRelease)},
      {"cuCtxSetCurrent", 4000, SIM_FN(cuCtxSetCurrent)},
      {"cuStreamCreate", 2000, SIM_FN(cuStreamCreate)},
      {"cuStreamDestroy", 2000, nullptr},
      {"cuStreamDestroy", 4000, SIM_FN(cuStreamDestroy)},
      {"cuStreamSynchronize", 2000, SIM_FN(cuStreamSynchronize)},
      {"cuModuleLoadData", 2000, SIM_FN(cuModuleLoadData)},
      {"cuModuleUnload", 2000, SIM_FN(cuModuleUnload)},
      {"cuModuleGetFunction", 2000, SIM_FN(cuModuleGetFunction)},
      {"cuFuncGetParamInfo", 12040, SIM_FN(cuFuncGetParamInfo)},
      {"cuFuncGetAttribute", 2020, SIM_FN(cuFuncGetAttribute)},
      {"cuFuncSetAttribute", 9000, SIM_FN(cuFuncSetAttribute)},
      {"cuLaunchKernel", 4000, SIM_FN(cuLaunchKernel)},
      {"cuLaunchKernelEx", 11060, SIM_FN(cuLaunchKernelEx)},
      {"cuMemAlloc", 2000, nullptr},
      {"cuMemAlloc", 3020, SIM_FN(cuMemAlloc)},
      {"cuMemFree", 2000, nullptr},
      {"cuMemFree", 3020, SIM_FN(cuMemFree)},
      {"cuMemHostAlloc", 2020, SIM_FN(cuMemHostAlloc)},
      {"cuMemFreeHost", 2000, SIM_FN(cuMemFreeHost)},
      {"cuMemcpyHtoDAsync", 2000, nullptr},
      {"cuMemcpyHtoDAsync", 3020, SIM_FN(cuMemcpyHtoDAsync)},
      {"cuMemcpyDtoHAsync", 2000, nullptr},
      {"cuMemcpyDtoHAsync", 3020, SIM_FN(cuMemcpyDtoHAsync)},
      {"cuMemcpyDtoDAsync", 3000, nullptr},
      {"cuMemcpyDtoDAsync", 3020, SIM_FN(cuMemcpyDtoDAsync)},
      {"cuMemsetD8Async", 3000, nullptr},
      {"cuMemsetD8Async", 3020, SIM_FN(cuMemsetD8Async)},
      {"cuEventCreate", 2000, SIM_FN(cuEventCreate)},
      {"cuEventRecord", 2000, SIM_FN(cuEventRecord)},
      {"cuEventSynchronize", 2000, SIM_FN(cuEventSynchronize)},
      {"cuEventElapsedTime", 2000, SIM_FN(cuEventElapsedTime)},
      {"cuEventElapsedTime", 12080, SIM_FN(cuEventElapsedTime)},  // _v2: same signature
      {"cuEventDestroy", 2000, nullptr},
      {"cuEventDestroy", 4000, SIM_FN(cuEventDestroy)},
      {"cuStreamBeginCapture", 10000, nullptr},  // v1 has no mode argument
      {"cuStreamBeginCapture", 10010, SIM_FN(cuStreamBeginCapture)},
      {"cuStreamEndCapture", 10000, SIM_FN(cuStreamEndCapture)},
      {"cuGraphInstantiateWithFlags", 11040, SIM_FN(cuGraphInstantiateWithFlags)},
      {"cuGraphLaunch", 10000, SIM_FN(cuGraphLaunch)},
      {"cuGraphExecDestroy", 10000, SIM_FN(cuGraphExecDestroy)},
      {"cuGraphDestroy", 10000, SIM_FN(cuGraphDestroy)},
  };
  return v;
}
#undef SIM_FN

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

const ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
     "operation not permitted on an event last recorded in a capturing stream"},
};

}  // namespace

const char* error_text(CUresult e, bool name) {
  for (const ErrorText& t : kErrors)
    if (t.code == e) return name ? t.name : t.text;
  return nullptr;
}

}  // namespace kern::sim::api

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                                                    cuuint64_t /*flags*/,
                                                                    CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const kern::sim::api::Variant* best = nullptr;
  bool exists = false;
  for (const auto& v : kern::sim::api::variants()) {
    if (std::strcmp(v.name, symbol) != 0) continue;
    exists = true;
    if (v.version <= version && (best == nullptr || v.version > best->version)) best = &v;
  }
  CUdriverProcAddressQueryResult r = CU_GET_PROC_ADDRESS_SUCCESS;
  if (!exists || (best != nullptr && best->fn == nullptr)) {
    r = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  } else if (best == nullptr) {
    r = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  } else {
    *pfn = best->fn;
  }
  if (status) *status = r;
  return r == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

// The plain symbols the --device auto probe (kern-load/device_select.cpp) dlsyms.
__attribute__((visibility("default"))) CUresult cuInit(unsigned flags) { return kern::sim::api::cuInit(flags); }
__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int* n) { return kern::sim::api::cuDeviceGetCount(n); }
__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* v) { return kern::sim::api::cuDriverGetVersion(v); }

}  // extern "C"

CUresult kern_sim_enqueue_host_work(CUstream stream, const std::string& what, std::function<std::string()> work) {
  return kern::sim::api::enqueue_host_work(stream, what, std::move(work));
}

bool kern_sim_device_range(uint64_t addr, uint64_t bytes) { return kern::sim::api::device_range(addr, bytes); }

void kern_sim_shadow_launch_write(uint64_t addr, uint64_t bytes) { kern::sim::shadow_launch_write(addr, bytes); }
