// The capture library's entry points (LD_PRELOAD, docs/mining.md "How the
// capture hooks"). kern and the CUDA runtime reach the driver through
// dlopen("libcuda.so.1") + dlsym("cuGetProcAddress*") + cuGetProcAddress,
// so interposing cuLaunchKernel by name would see nothing: this library
// defines dlsym, hands out its own cuGetProcAddress, and that one hands out
// a wrapper for each recorded entry point (the real one is kept per slot).
// Entry points asked for at an ABI version older than the one wrapped (a
// different C signature, e.g. cuMemAlloc v1's 32-bit size) are passed
// through unrecorded.
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "mining/capture/capture_blas_hooks.h"
#include "mining/capture/capture_recorder.h"

namespace kern::capture {
namespace {

enum Hook : int {
  kGetProcAddressV2, kGetProcAddressV1,
  kModuleLoadData, kModuleLoadDataEx, kModuleLoadFatBinary, kModuleLoad, kModuleGetFunction,
  kLibraryLoadData, kLibraryLoadFromFile, kLibraryGetKernel, kKernelGetFunction,
  kLaunchKernel, kLaunchKernelEx,
  kMemAlloc, kMemAllocAsync, kMemAllocManaged, kMemAllocPitch, kMemFree, kMemFreeAsync,
  kMemHostAlloc, kMemAllocHost, kMemFreeHost,
  kMemcpyHtoD, kMemcpyHtoDAsync, kMemcpyDtoH, kMemcpyDtoHAsync, kMemcpyDtoD, kMemcpyDtoDAsync, kMemsetD8, kMemsetD8Async,
  kStreamBeginCapture, kStreamEndCapture, kGraphLaunch,
  kHookCount
};

/// Up to two real entry points per name: the default-stream variant and the
/// per-thread-default-stream (_ptsz) one a caller may also ask for.
constexpr int kSlots = 2;
std::atomic<void*> g_real[kHookCount][kSlots];

template <typename F>
F real(Hook h, int slot) {
  return reinterpret_cast<F>(g_real[h][slot].load(std::memory_order_acquire));
}

Recorder& rec() { return Recorder::get(); }

// ---- the wrappers (one instantiation per slot) ------------------------------------

template <int S>
CUresult w_cuModuleLoadData(CUmodule* m, const void* image) {
  const CUresult r = real<decltype(&w_cuModuleLoadData<S>)>(kModuleLoadData, S)(m, image);
  if (r == CUDA_SUCCESS) rec().on_module(*m, image, "cuModuleLoadData");
  return r;
}
template <int S>
CUresult w_cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned n, CUjit_option* o, void** v) {
  const CUresult r = real<decltype(&w_cuModuleLoadDataEx<S>)>(kModuleLoadDataEx, S)(m, image, n, o, v);
  if (r == CUDA_SUCCESS) rec().on_module(*m, image, "cuModuleLoadDataEx");
  return r;
}
template <int S>
CUresult w_cuModuleLoadFatBinary(CUmodule* m, const void* image) {
  const CUresult r = real<decltype(&w_cuModuleLoadFatBinary<S>)>(kModuleLoadFatBinary, S)(m, image);
  if (r == CUDA_SUCCESS) rec().on_module(*m, image, "cuModuleLoadFatBinary");
  return r;
}
template <int S>
CUresult w_cuModuleLoad(CUmodule* m, const char* fname) {
  const CUresult r = real<decltype(&w_cuModuleLoad<S>)>(kModuleLoad, S)(m, fname);
  if (r == CUDA_SUCCESS) rec().on_module_file(*m, fname, "cuModuleLoad");
  return r;
}
template <int S>
CUresult w_cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  const CUresult r = real<decltype(&w_cuModuleGetFunction<S>)>(kModuleGetFunction, S)(f, m, name);
  if (r == CUDA_SUCCESS) rec().on_function(*f, m, name);
  return r;
}
template <int S>
CUresult w_cuLibraryLoadData(CUlibrary* lib, const void* code, CUjit_option* jo, void** jv, unsigned jn,
                             CUlibraryOption* lo, void** lv, unsigned ln) {
  const CUresult r = real<decltype(&w_cuLibraryLoadData<S>)>(kLibraryLoadData, S)(lib, code, jo, jv, jn, lo, lv, ln);
  if (r == CUDA_SUCCESS) rec().on_module(*lib, code, "cuLibraryLoadData");
  return r;
}
template <int S>
CUresult w_cuLibraryLoadFromFile(CUlibrary* lib, const char* fname, CUjit_option* jo, void** jv, unsigned jn,
                                 CUlibraryOption* lo, void** lv, unsigned ln) {
  const CUresult r =
      real<decltype(&w_cuLibraryLoadFromFile<S>)>(kLibraryLoadFromFile, S)(lib, fname, jo, jv, jn, lo, lv, ln);
  if (r == CUDA_SUCCESS) rec().on_module_file(*lib, fname, "cuLibraryLoadFromFile");
  return r;
}
template <int S>
CUresult w_cuLibraryGetKernel(CUkernel* k, CUlibrary lib, const char* name) {
  const CUresult r = real<decltype(&w_cuLibraryGetKernel<S>)>(kLibraryGetKernel, S)(k, lib, name);
  if (r == CUDA_SUCCESS) rec().on_function(*k, lib, name);  // a CUkernel may be launched as a CUfunction
  return r;
}
template <int S>
CUresult w_cuKernelGetFunction(CUfunction* f, CUkernel k) {
  const CUresult r = real<decltype(&w_cuKernelGetFunction<S>)>(kKernelGetFunction, S)(f, k);
  if (r == CUDA_SUCCESS) rec().on_function(*f, k, nullptr);
  return r;
}

template <int S>
CUresult w_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, CUstream s, void** params, void** extra) {
  LaunchView l;
  l.via = "cuLaunchKernel";
  l.function = f;
  l.grid[0] = gx, l.grid[1] = gy, l.grid[2] = gz, l.block[0] = bx, l.block[1] = by, l.block[2] = bz;
  l.shared_bytes = shared, l.stream = s, l.params = params, l.extra = extra;
  l.in_library = current_library_call();
  rec().before_launch(l);
  const CUresult r =
      real<decltype(&w_cuLaunchKernel<S>)>(kLaunchKernel, S)(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
  rec().after_launch(l, r);
  return r;
}
template <int S>
CUresult w_cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  LaunchView l;
  l.via = "cuLaunchKernelEx";
  l.function = f;
  if (c != nullptr) {
    l.grid[0] = c->gridDimX, l.grid[1] = c->gridDimY, l.grid[2] = c->gridDimZ;
    l.block[0] = c->blockDimX, l.block[1] = c->blockDimY, l.block[2] = c->blockDimZ;
    l.shared_bytes = c->sharedMemBytes, l.stream = c->hStream, l.attrs = c->attrs, l.num_attrs = c->numAttrs;
    if (l.attrs == nullptr) l.num_attrs = 0;
  }
  l.params = params, l.extra = extra;
  l.in_library = current_library_call();
  rec().before_launch(l);
  const CUresult r = real<decltype(&w_cuLaunchKernelEx<S>)>(kLaunchKernelEx, S)(c, f, params, extra);
  rec().after_launch(l, r);
  return r;
}

template <int S>
CUresult w_cuMemAlloc(CUdeviceptr* p, size_t n) {
  const CUresult r = real<decltype(&w_cuMemAlloc<S>)>(kMemAlloc, S)(p, n);
  if (r == CUDA_SUCCESS) rec().on_alloc(*p, n, false, "cuMemAlloc");
  return r;
}
template <int S>
CUresult w_cuMemAllocAsync(CUdeviceptr* p, size_t n, CUstream s) {
  const CUresult r = real<decltype(&w_cuMemAllocAsync<S>)>(kMemAllocAsync, S)(p, n, s);
  if (r == CUDA_SUCCESS) rec().on_alloc(*p, n, false, "cuMemAllocAsync");
  return r;
}
template <int S>
CUresult w_cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned flags) {
  const CUresult r = real<decltype(&w_cuMemAllocManaged<S>)>(kMemAllocManaged, S)(p, n, flags);
  if (r == CUDA_SUCCESS) rec().on_alloc(*p, n, false, "cuMemAllocManaged");
  return r;
}
template <int S>
CUresult w_cuMemAllocPitch(CUdeviceptr* p, size_t* pitch, size_t width, size_t height, unsigned elem) {
  const CUresult r = real<decltype(&w_cuMemAllocPitch<S>)>(kMemAllocPitch, S)(p, pitch, width, height, elem);
  if (r == CUDA_SUCCESS) rec().on_alloc(*p, *pitch * height, false, "cuMemAllocPitch");
  return r;
}
template <int S>
CUresult w_cuMemFree(CUdeviceptr p) {
  rec().on_free(p, "cuMemFree");  // before the real free: a snapshot is verified while the bytes exist
  return real<decltype(&w_cuMemFree<S>)>(kMemFree, S)(p);
}
template <int S>
CUresult w_cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  rec().on_free(p, "cuMemFreeAsync");
  return real<decltype(&w_cuMemFreeAsync<S>)>(kMemFreeAsync, S)(p, s);
}
template <int S>
CUresult w_cuMemHostAlloc(void** p, size_t n, unsigned flags) {
  const CUresult r = real<decltype(&w_cuMemHostAlloc<S>)>(kMemHostAlloc, S)(p, n, flags);
  if (r == CUDA_SUCCESS) rec().on_alloc(reinterpret_cast<uint64_t>(*p), n, true, "cuMemHostAlloc");
  return r;
}
template <int S>
CUresult w_cuMemAllocHost(void** p, size_t n) {
  const CUresult r = real<decltype(&w_cuMemAllocHost<S>)>(kMemAllocHost, S)(p, n);
  if (r == CUDA_SUCCESS) rec().on_alloc(reinterpret_cast<uint64_t>(*p), n, true, "cuMemAllocHost");
  return r;
}
template <int S>
CUresult w_cuMemFreeHost(void* p) {
  rec().on_free(reinterpret_cast<uint64_t>(p), "cuMemFreeHost");
  return real<decltype(&w_cuMemFreeHost<S>)>(kMemFreeHost, S)(p);
}
template <int S>
CUresult w_cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  const CUresult r = real<decltype(&w_cuMemcpyHtoD<S>)>(kMemcpyHtoD, S)(dst, src, n);
  if (r == CUDA_SUCCESS) rec().on_htod(dst, n, nullptr, "cuMemcpyHtoD");
  return r;
}
template <int S>
CUresult w_cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  const CUresult r = real<decltype(&w_cuMemcpyHtoDAsync<S>)>(kMemcpyHtoDAsync, S)(dst, src, n, s);
  if (r == CUDA_SUCCESS) rec().on_htod(dst, n, s, "cuMemcpyHtoDAsync");
  return r;
}
template <int S>
CUresult w_cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  const CUresult r = real<decltype(&w_cuMemcpyDtoH<S>)>(kMemcpyDtoH, S)(dst, src, n);
  if (r == CUDA_SUCCESS) rec().on_dtoh(src, n, nullptr, "cuMemcpyDtoH");
  return r;
}
template <int S>
CUresult w_cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  const CUresult r = real<decltype(&w_cuMemcpyDtoHAsync<S>)>(kMemcpyDtoHAsync, S)(dst, src, n, s);
  if (r == CUDA_SUCCESS) rec().on_dtoh(src, n, s, "cuMemcpyDtoHAsync");
  return r;
}
template <int S>
CUresult w_cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  rec().on_device_write(dst, n);
  return real<decltype(&w_cuMemcpyDtoD<S>)>(kMemcpyDtoD, S)(dst, src, n);
}
template <int S>
CUresult w_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  rec().on_device_write(dst, n);
  return real<decltype(&w_cuMemcpyDtoDAsync<S>)>(kMemcpyDtoDAsync, S)(dst, src, n, s);
}
template <int S>
CUresult w_cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
  rec().on_device_write(dst, n);
  return real<decltype(&w_cuMemsetD8<S>)>(kMemsetD8, S)(dst, v, n);
}
template <int S>
CUresult w_cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  rec().on_device_write(dst, n);
  return real<decltype(&w_cuMemsetD8Async<S>)>(kMemsetD8Async, S)(dst, v, n, s);
}
template <int S>
CUresult w_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  const CUresult r = real<decltype(&w_cuStreamBeginCapture<S>)>(kStreamBeginCapture, S)(s, mode);
  if (r == CUDA_SUCCESS) rec().on_capture_begin(s);
  return r;
}
template <int S>
CUresult w_cuStreamEndCapture(CUstream s, CUgraph* g) {
  rec().on_capture_end(s);  // the capture ends whatever the result (CUDA: even when invalidated)
  return real<decltype(&w_cuStreamEndCapture<S>)>(kStreamEndCapture, S)(s, g);
}
template <int S>
CUresult w_cuGraphLaunch(CUgraphExec g, CUstream s) {
  const CUresult r = real<decltype(&w_cuGraphLaunch<S>)>(kGraphLaunch, S)(g, s);
  if (r == CUDA_SUCCESS) rec().on_graph_launch(s);
  return r;
}

CUresult w_cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                               CUdriverProcAddressQueryResult* status);
CUresult w_cuGetProcAddress_v1(const char* symbol, void** pfn, int version, cuuint64_t flags);

/// Each wrapped entry point: the name cuGetProcAddress is asked for, the
/// oldest ABI version with the wrapper's signature, and the names dlsym
/// finds that ABI under.
struct HookInfo {
  const char* name;
  int min_version;
  const char* dlsym_names[3];
  void* wrap[kSlots];
};

#define KERN_CAPTURE_W(f) {reinterpret_cast<void*>(&w_##f<0>), reinterpret_cast<void*>(&w_##f<1>)}
const HookInfo kHooks[] = {
    {"cuGetProcAddress", 12000, {"cuGetProcAddress_v2"}, {reinterpret_cast<void*>(&w_cuGetProcAddress_v2), nullptr}},
    {"", 0, {"cuGetProcAddress"}, {reinterpret_cast<void*>(&w_cuGetProcAddress_v1), nullptr}},
    {"cuModuleLoadData", 2000, {"cuModuleLoadData"}, KERN_CAPTURE_W(cuModuleLoadData)},
    {"cuModuleLoadDataEx", 2010, {"cuModuleLoadDataEx"}, KERN_CAPTURE_W(cuModuleLoadDataEx)},
    {"cuModuleLoadFatBinary", 2000, {"cuModuleLoadFatBinary"}, KERN_CAPTURE_W(cuModuleLoadFatBinary)},
    {"cuModuleLoad", 2000, {"cuModuleLoad"}, KERN_CAPTURE_W(cuModuleLoad)},
    {"cuModuleGetFunction", 2000, {"cuModuleGetFunction"}, KERN_CAPTURE_W(cuModuleGetFunction)},
    {"cuLibraryLoadData", 12000, {"cuLibraryLoadData"}, KERN_CAPTURE_W(cuLibraryLoadData)},
    {"cuLibraryLoadFromFile", 12000, {"cuLibraryLoadFromFile"}, KERN_CAPTURE_W(cuLibraryLoadFromFile)},
    {"cuLibraryGetKernel", 12000, {"cuLibraryGetKernel"}, KERN_CAPTURE_W(cuLibraryGetKernel)},
    {"cuKernelGetFunction", 12000, {"cuKernelGetFunction"}, KERN_CAPTURE_W(cuKernelGetFunction)},
    {"cuLaunchKernel", 4000, {"cuLaunchKernel", "cuLaunchKernel_ptsz"}, KERN_CAPTURE_W(cuLaunchKernel)},
    {"cuLaunchKernelEx", 11060, {"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"}, KERN_CAPTURE_W(cuLaunchKernelEx)},
    {"cuMemAlloc", 3020, {"cuMemAlloc_v2"}, KERN_CAPTURE_W(cuMemAlloc)},
    {"cuMemAllocAsync", 11020, {"cuMemAllocAsync", "cuMemAllocAsync_ptsz"}, KERN_CAPTURE_W(cuMemAllocAsync)},
    {"cuMemAllocManaged", 6000, {"cuMemAllocManaged"}, KERN_CAPTURE_W(cuMemAllocManaged)},
    {"cuMemAllocPitch", 3020, {"cuMemAllocPitch_v2"}, KERN_CAPTURE_W(cuMemAllocPitch)},
    {"cuMemFree", 3020, {"cuMemFree_v2"}, KERN_CAPTURE_W(cuMemFree)},
    {"cuMemFreeAsync", 11020, {"cuMemFreeAsync", "cuMemFreeAsync_ptsz"}, KERN_CAPTURE_W(cuMemFreeAsync)},
    {"cuMemHostAlloc", 2020, {"cuMemHostAlloc"}, KERN_CAPTURE_W(cuMemHostAlloc)},
    {"cuMemAllocHost", 3020, {"cuMemAllocHost_v2"}, KERN_CAPTURE_W(cuMemAllocHost)},
    {"cuMemFreeHost", 2000, {"cuMemFreeHost"}, KERN_CAPTURE_W(cuMemFreeHost)},
    {"cuMemcpyHtoD", 3020, {"cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds"}, KERN_CAPTURE_W(cuMemcpyHtoD)},
    {"cuMemcpyHtoDAsync", 3020, {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz"}, KERN_CAPTURE_W(cuMemcpyHtoDAsync)},
    {"cuMemcpyDtoH", 3020, {"cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds"}, KERN_CAPTURE_W(cuMemcpyDtoH)},
    {"cuMemcpyDtoHAsync", 3020, {"cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz"}, KERN_CAPTURE_W(cuMemcpyDtoHAsync)},
    {"cuMemcpyDtoD", 3020, {"cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds"}, KERN_CAPTURE_W(cuMemcpyDtoD)},
    {"cuMemcpyDtoDAsync", 3020, {"cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz"}, KERN_CAPTURE_W(cuMemcpyDtoDAsync)},
    {"cuMemsetD8", 3020, {"cuMemsetD8_v2", "cuMemsetD8_v2_ptds"}, KERN_CAPTURE_W(cuMemsetD8)},
    {"cuMemsetD8Async", 3020, {"cuMemsetD8Async", "cuMemsetD8Async_ptsz"}, KERN_CAPTURE_W(cuMemsetD8Async)},
    {"cuStreamBeginCapture", 10010, {"cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz"},
     KERN_CAPTURE_W(cuStreamBeginCapture)},
    {"cuStreamEndCapture", 10000, {"cuStreamEndCapture", "cuStreamEndCapture_ptsz"}, KERN_CAPTURE_W(cuStreamEndCapture)},
    {"cuGraphLaunch", 10000, {"cuGraphLaunch", "cuGraphLaunch_ptsz"}, KERN_CAPTURE_W(cuGraphLaunch)},
};
#undef KERN_CAPTURE_W
static_assert(sizeof(kHooks) / sizeof(kHooks[0]) == kHookCount, "one kHooks entry per Hook, in enum order");

/// Keeps `fn` as the real entry point of hook `h` and returns the wrapper
/// to hand out instead; the real one itself when both slots hold other
/// variants (then that variant goes unrecorded).
void* wrap(Hook h, void* fn) {
  if (fn == nullptr || kHooks[h].wrap[0] == nullptr) return fn;
  for (int s = 0; s < kSlots && kHooks[h].wrap[s] != nullptr; ++s) {
    void* expected = nullptr;
    if (g_real[h][s].compare_exchange_strong(expected, fn) || expected == fn) return kHooks[h].wrap[s];
  }
  return fn;
}

using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

/// The driver calls the recorder makes itself, resolved once the real
/// cuGetProcAddress is known.
void resolve_recorder_calls(GetProcV2 v2, GetProcV1 v1) {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  auto get = [&](const char* name, int version) -> void* {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (v2 != nullptr) {
      if (v2(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS) fn = nullptr;
    } else if (v1 != nullptr && v1(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT) != CUDA_SUCCESS) {
      fn = nullptr;
    }
    return fn;
  };
  DriverCalls c;
  c.func_get_param_info = reinterpret_cast<decltype(c.func_get_param_info)>(get("cuFuncGetParamInfo", 12040));
  c.memcpy_dtoh_async = reinterpret_cast<decltype(c.memcpy_dtoh_async)>(get("cuMemcpyDtoHAsync", 3020));
  c.stream_synchronize = reinterpret_cast<decltype(c.stream_synchronize)>(get("cuStreamSynchronize", 2000));
  c.ctx_synchronize = reinterpret_cast<decltype(c.ctx_synchronize)>(get("cuCtxSynchronize", 2000));
  rec().set_driver_calls(c);
}

/// The wrapper for `symbol` asked of cuGetProcAddress at `version`, given
/// the real result `fn`.
void* wrap_proc(const char* symbol, int version, void* fn) {
  if (fn == nullptr || symbol == nullptr) return fn;
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {  // the runtime asks the driver for itself
    return version >= 12000 ? wrap(kGetProcAddressV2, fn) : wrap(kGetProcAddressV1, fn);
  }
  for (int h = kModuleLoadData; h < kHookCount; ++h)
    if (std::strcmp(kHooks[h].name, symbol) == 0) return version >= kHooks[h].min_version ? wrap(Hook(h), fn) : fn;
  return fn;
}

CUresult w_cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                               CUdriverProcAddressQueryResult* status) {
  auto real_fn = real<GetProcV2>(kGetProcAddressV2, 0);
  resolve_recorder_calls(real_fn, nullptr);
  const CUresult r = real_fn(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && pfn != nullptr) *pfn = wrap_proc(symbol, version, *pfn);
  return r;
}

CUresult w_cuGetProcAddress_v1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  auto real_fn = real<GetProcV1>(kGetProcAddressV1, 0);
  resolve_recorder_calls(nullptr, real_fn);
  const CUresult r = real_fn(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr) *pfn = wrap_proc(symbol, version, *pfn);
  return r;
}

using DlsymFn = void* (*)(void*, const char*);

/// glibc's dlsym (2.34+ in libc, else libdl's 2.2.5 version), found with
/// dlvsym so this library's own dlsym is skipped.
DlsymFn real_dlsym() {
  static DlsymFn fn = [] {
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");  // aarch64's first version
    return reinterpret_cast<DlsymFn>(p);
  }();
  return fn;
}

}  // namespace
}  // namespace kern::capture

extern "C" {

/// dlsym, as glibc's, but a CUDA driver entry point this library records
/// comes back wrapped (see the file comment). RTLD_NEXT lookups are made
/// from this library, which is first in the search order, so they find the
/// same definition the caller would unless the caller defines it itself.
__attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  using namespace kern::capture;
  DlsymFn real_fn = real_dlsym();
  if (real_fn == nullptr) return nullptr;
  void* fn = real_fn(handle, name);
  if (fn == nullptr || name[0] != 'c' || name[1] != 'u') return fn;
  if (std::strncmp(name, "cublasLt", 8) == 0) return wrap_blas(name, fn);
  for (int h = 0; h < kHookCount; ++h)
    for (const char* n : kHooks[h].dlsym_names)
      if (n != nullptr && std::strcmp(n, name) == 0) {
        if (h == kGetProcAddressV2) resolve_recorder_calls(reinterpret_cast<GetProcV2>(fn), nullptr);
        if (h == kGetProcAddressV1) resolve_recorder_calls(nullptr, reinterpret_cast<GetProcV1>(fn));
        return wrap(Hook(h), fn);
      }
  return fn;
}

}  // extern "C"
