// The simulated driver's entry points (driver_api.cpp), named as CUDA's
// without the ABI suffix: each is the variant cuda_driver.h requests
// (cuMemAlloc = cuMemAlloc_v2, cuStreamBeginCapture = _v2, ...), and
// driver_proc.cpp maps (name, version) to them as cuGetProcAddress does.
#pragma once

#include <cuda.h>

#include <functional>
#include <string>

namespace kern::sim::api {

CUresult cuGetErrorString(CUresult e, const char** out);
CUresult cuGetErrorName(CUresult e, const char** out);
CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int* v);
CUresult cuDeviceGetCount(int* n);
CUresult cuDeviceGet(CUdevice* d, int ordinal);
CUresult cuDeviceGetName(char* name, int len, CUdevice d);
CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d);
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice d);
CUresult cuDevicePrimaryCtxRelease(CUdevice d);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuStreamCreate(CUstream* out, unsigned flags);
CUresult cuStreamDestroy(CUstream s);
CUresult cuStreamSynchronize(CUstream s);
CUresult cuMemAlloc(CUdeviceptr* out, size_t bytes);
CUresult cuMemFree(CUdeviceptr p);
CUresult cuMemHostAlloc(void** out, size_t bytes, unsigned flags);
CUresult cuMemFreeHost(void* p);
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s);
CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s);
CUresult cuEventCreate(CUevent* out, unsigned flags);
CUresult cuEventRecord(CUevent e, CUstream s);
CUresult cuEventSynchronize(CUevent e);
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end);
CUresult cuEventDestroy(CUevent e);
CUresult cuModuleLoadData(CUmodule* out, const void* image);
CUresult cuModuleUnload(CUmodule m);
CUresult cuModuleGetFunction(CUfunction* out, CUmodule m, const char* name);
CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size);
CUresult cuFuncGetAttribute(int* v, CUfunction_attribute a, CUfunction f);
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int value);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void** params, void** extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra);
CUresult cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream s, CUgraph* out);
CUresult cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph g, unsigned long long flags);
CUresult cuGraphLaunch(CUgraphExec g, CUstream s);
CUresult cuGraphExecDestroy(CUgraphExec g);
CUresult cuGraphDestroy(CUgraph g);

/// CUDA's name ("CUDA_ERROR_INVALID_VALUE") or text of a result code, or
/// null for a code the simulation does not know.
const char* error_text(CUresult e, bool name);

/// sim_hooks.h: queues `work` on stream `s` of the current context (or
/// records it into its capture); CUDA_ERROR_INVALID_CONTEXT / _HANDLE as a
/// launch would.
CUresult enqueue_host_work(CUstream s, const std::string& what, std::function<std::string()> work);
/// Whether [p, p + n) lies inside one device allocation.
bool device_range(uint64_t p, uint64_t n);

}  // namespace kern::sim::api
