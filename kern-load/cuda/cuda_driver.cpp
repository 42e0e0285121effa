// Loading the CUDA driver with dlopen + cuGetProcAddress (cuda_driver.h).
#include "kern-load/cuda/cuda_driver.h"

#include <dlfcn.h>

#include "kern-load/cuda/library_search.h"

namespace kern::load::cuda {

namespace {

/// Resolves `name` at ABI version `version` into `*slot`.
template <typename Pfn>
Status resolve(PFN_cuGetProcAddress_v12000 get_proc, const char* name, int version, Pfn* slot) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult r = get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (r != CUDA_SUCCESS || fn == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) {
    const char* why = found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          ? "the driver is older than this entry point"
                          : "entry point not found";
    return make_error(ErrorKind::kDevice, std::string("cuda driver: cuGetProcAddress(") + name + ", " +
                                              std::to_string(version) + "): " + why +
                                              " (kern needs a CUDA 12.4+ driver)");
  }
  *slot = reinterpret_cast<Pfn>(fn);
  return Status::ok_status();
}

}  // namespace

Result<std::unique_ptr<Driver>> Driver::load(const std::string& library) {
  std::unique_ptr<Driver> d(new Driver());
  if (library.find('/') != std::string::npos) {  // an explicit path: that file only
    d->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (d->handle_ == nullptr) {
      const char* why = dlerror();
      return make_error(ErrorKind::kDevice,
                        "no CUDA driver: dlopen " + library + " failed: " + (why ? why : "unknown error"));
    }
    d->path_ = library;
  } else {
    auto opened = open_cuda_driver(library);
    if (!opened.ok())
      return make_error(ErrorKind::kDevice, "no CUDA driver: " + opened.error().message +
                                                " (is an NVIDIA driver installed? use --device cpu)");
    d->handle_ = opened.value().handle;
    d->path_ = opened.value().path;
  }
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(d->handle_, "cuGetProcAddress_v2"));
  if (get_proc == nullptr)
    return make_error(ErrorKind::kDevice, d->path_ + ": no cuGetProcAddress_v2 (kern needs a CUDA 12.4+ driver)");
  DriverApi& a = d->api_;
#define KERN_CU_RESOLVE(name, version) KERN_RETURN_IF_ERROR(resolve(get_proc, #name, version, &a.name))
  KERN_CU_RESOLVE(cuGetErrorString, 6000);
  KERN_CU_RESOLVE(cuGetErrorName, 6000);
  KERN_CU_RESOLVE(cuInit, 2000);
  KERN_CU_RESOLVE(cuDriverGetVersion, 2020);
  KERN_CU_RESOLVE(cuDeviceGetCount, 2000);
  KERN_CU_RESOLVE(cuDeviceGet, 2000);
  KERN_CU_RESOLVE(cuDeviceGetName, 2000);
  KERN_CU_RESOLVE(cuDeviceGetAttribute, 2000);
  KERN_CU_RESOLVE(cuDevicePrimaryCtxRetain, 7000);
  KERN_CU_RESOLVE(cuDevicePrimaryCtxRelease, 11000);
  KERN_CU_RESOLVE(cuCtxSetCurrent, 4000);
  KERN_CU_RESOLVE(cuStreamCreate, 2000);
  KERN_CU_RESOLVE(cuStreamDestroy, 4000);
  KERN_CU_RESOLVE(cuStreamSynchronize, 2000);
  KERN_CU_RESOLVE(cuModuleLoadData, 2000);
  KERN_CU_RESOLVE(cuModuleUnload, 2000);
  KERN_CU_RESOLVE(cuModuleGetFunction, 2000);
  KERN_CU_RESOLVE(cuFuncGetParamInfo, 12040);
  KERN_CU_RESOLVE(cuFuncGetAttribute, 2020);
  KERN_CU_RESOLVE(cuFuncSetAttribute, 9000);
  KERN_CU_RESOLVE(cuLaunchKernel, 4000);
  KERN_CU_RESOLVE(cuLaunchKernelEx, 11060);
  KERN_CU_RESOLVE(cuMemAlloc, 3020);
  KERN_CU_RESOLVE(cuMemFree, 3020);
  KERN_CU_RESOLVE(cuMemHostAlloc, 2020);
  KERN_CU_RESOLVE(cuMemFreeHost, 2000);
  KERN_CU_RESOLVE(cuMemcpyHtoDAsync, 3020);
  KERN_CU_RESOLVE(cuMemcpyDtoHAsync, 3020);
  KERN_CU_RESOLVE(cuMemcpyDtoDAsync, 3020);
  KERN_CU_RESOLVE(cuMemsetD8Async, 3020);
  KERN_CU_RESOLVE(cuEventCreate, 2000);
  KERN_CU_RESOLVE(cuEventRecord, 2000);
  KERN_CU_RESOLVE(cuEventSynchronize, 2000);
  KERN_CU_RESOLVE(cuEventElapsedTime, 2000);
  KERN_CU_RESOLVE(cuEventDestroy, 4000);
  KERN_CU_RESOLVE(cuStreamBeginCapture, 10010);
  KERN_CU_RESOLVE(cuStreamEndCapture, 10000);
  KERN_CU_RESOLVE(cuGraphInstantiateWithFlags, 11040);
  KERN_CU_RESOLVE(cuGraphLaunch, 10000);
  KERN_CU_RESOLVE(cuGraphExecDestroy, 10000);
  KERN_CU_RESOLVE(cuGraphDestroy, 10000);
#undef KERN_CU_RESOLVE
  KERN_RETURN_IF_ERROR(d->check(a.cuInit(0), "cuInit"));
  KERN_RETURN_IF_ERROR(d->check(a.cuDriverGetVersion(&d->version_), "cuDriverGetVersion"));
  return d;
}

// The handle is never dlclosed: libcuda is not meant to be unloaded once
// cuInit ran (its threads and exit handlers outlive the last call).
Driver::~Driver() = default;

std::string describe_cu_result(const DriverApi& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(r, &text) != CUDA_SUCCESS) text = nullptr;
  std::string s = name ? name : "CUresult " + std::to_string(static_cast<int>(r));
  if (text) s += std::string(" (") + text + ")";
  return s;
}

std::string Driver::describe(CUresult r) const { return describe_cu_result(api_, r); }

Status Driver::check(CUresult r, const char* call) const {
  if (r == CUDA_SUCCESS) return Status::ok_status();
  return make_error(ErrorKind::kDevice, std::string(call) + ": " + describe(r));
}

}  // namespace kern::load::cuda
