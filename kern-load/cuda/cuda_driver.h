// The CUDA driver API loaded at run time (SPEC §10): dlopen("libcuda.so.1")
// and every entry point through cuGetProcAddress at the ABI version its PFN
// type names (cudaTypedefs.h), so cuMemAlloc is the _v2 ABI, cuCtx* the
// current one, whatever macros cuda.h maps names to. Nothing links libcuda
// or cudart: binaries build and start where there is no driver and report
// "no CUDA driver" as an error value.
//
// Used by the cuda device (cuda_device.h) and the GPU test harness
// (test/gpu/). Not thread-safe to load; the loaded table is read-only.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <memory>
#include <string>

#include "common/result.h"

namespace kern::load::cuda {

/// The driver entry points kern uses, each at a fixed ABI version.
struct DriverApi {
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
  PFN_cuInit_v2000 cuInit = nullptr;
  PFN_cuDriverGetVersion_v2020 cuDriverGetVersion = nullptr;
  PFN_cuDeviceGetCount_v2000 cuDeviceGetCount = nullptr;
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
  PFN_cuDeviceGetName_v2000 cuDeviceGetName = nullptr;
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease = nullptr;
  PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent = nullptr;
  PFN_cuStreamCreate_v2000 cuStreamCreate = nullptr;
  PFN_cuStreamDestroy_v4000 cuStreamDestroy = nullptr;
  PFN_cuStreamSynchronize_v2000 cuStreamSynchronize = nullptr;
  PFN_cuModuleLoadData_v2000 cuModuleLoadData = nullptr;
  PFN_cuModuleUnload_v2000 cuModuleUnload = nullptr;
  PFN_cuModuleGetFunction_v2000 cuModuleGetFunction = nullptr;
  PFN_cuFuncGetParamInfo_v12040 cuFuncGetParamInfo = nullptr;
  PFN_cuFuncGetAttribute_v2020 cuFuncGetAttribute = nullptr;
  PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute = nullptr;
  PFN_cuLaunchKernel_v4000 cuLaunchKernel = nullptr;
  /// For steps with "pdl": true (programmatic dependent launch, cuda_launch.h).
  PFN_cuLaunchKernelEx_v11060 cuLaunchKernelEx = nullptr;
  PFN_cuMemAlloc_v3020 cuMemAlloc = nullptr;
  PFN_cuMemFree_v3020 cuMemFree = nullptr;
  PFN_cuMemHostAlloc_v2020 cuMemHostAlloc = nullptr;
  PFN_cuMemFreeHost_v2000 cuMemFreeHost = nullptr;
  PFN_cuMemcpyHtoDAsync_v3020 cuMemcpyHtoDAsync = nullptr;
  PFN_cuMemcpyDtoHAsync_v3020 cuMemcpyDtoHAsync = nullptr;
  PFN_cuMemcpyDtoDAsync_v3020 cuMemcpyDtoDAsync = nullptr;
  PFN_cuMemsetD8Async_v3020 cuMemsetD8Async = nullptr;
  PFN_cuEventCreate_v2000 cuEventCreate = nullptr;
  PFN_cuEventRecord_v2000 cuEventRecord = nullptr;
  PFN_cuEventSynchronize_v2000 cuEventSynchronize = nullptr;
  PFN_cuEventElapsedTime_v2000 cuEventElapsedTime = nullptr;
  PFN_cuEventDestroy_v4000 cuEventDestroy = nullptr;
  // Graphs (SPEC §6): stream capture, instantiate, launch.
  PFN_cuStreamBeginCapture_v10010 cuStreamBeginCapture = nullptr;
  PFN_cuStreamEndCapture_v10000 cuStreamEndCapture = nullptr;
  PFN_cuGraphInstantiateWithFlags_v11040 cuGraphInstantiateWithFlags = nullptr;
  PFN_cuGraphLaunch_v10000 cuGraphLaunch = nullptr;
  PFN_cuGraphExecDestroy_v10000 cuGraphExecDestroy = nullptr;
  PFN_cuGraphDestroy_v10000 cuGraphDestroy = nullptr;
};

/// "CUDA_ERROR_X (text)" for a result code, through `api`'s cuGetErrorName /
/// cuGetErrorString ("CUresult N" when they are missing or fail).
std::string describe_cu_result(const DriverApi& api, CUresult r);

/// The loaded driver: the dlopen handle (owned, closed on destruction) and
/// the entry-point table.
class Driver {
 public:
  /// dlopens `library` (default "libcuda.so.1"; a name with a '/' is that
  /// file only, a bare soname is searched by open_cuda_driver: loader,
  /// toolkit dirs, kCudaDriverDirs, CUDA wheels), resolves
  /// cuGetProcAddress_v2 and every DriverApi entry, then calls cuInit(0).
  /// Errors (kDevice): no driver library ("no CUDA driver: dlopen
  /// libcuda.so.1 failed: <dlerror>; ..." listing every path tried), a driver older than CUDA 12.4 (cuFuncGetParamInfo
  /// missing), cuInit failure.
  static Result<std::unique_ptr<Driver>> load(const std::string& library = "libcuda.so.1");

  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  /// The entry points (valid while this object lives).
  const DriverApi& api() const { return api_; }
  /// What was dlopened: the soname (found by the loader) or the full path.
  const std::string& path() const { return path_; }
  /// Driver version as cuDriverGetVersion reports it (e.g. 13000).
  int version() const { return version_; }

  /// "CUDA_ERROR_X (text)" for a result code.
  std::string describe(CUresult r) const;
  /// OK for CUDA_SUCCESS; else a kDevice error "<call>: CUDA_ERROR_X (text)".
  Status check(CUresult r, const char* call) const;

 private:
  Driver() = default;
  void* handle_ = nullptr;  ///< dlopen handle, kept open for the process (see ~Driver)
  std::string path_;        ///< what was dlopened (path())
  DriverApi api_;
  int version_ = 0;
};

/// Checks a driver call inside a function returning Status/Result.
#define KERN_CU_CHECK(driver, call) KERN_RETURN_IF_ERROR((driver).check((call), #call))

}  // namespace kern::load::cuda
