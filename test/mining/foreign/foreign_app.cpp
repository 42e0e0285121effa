// A foreign CUDA driver-API program for the mining test: loads its fatbin
// (argv[1]) and serves requests of several lengths, like any CUDA program
// (the CUDA runtime reaches the driver the same way: dlopen("libcuda.so.1")
// and cuGetProcAddress). Per request: an input buffer allocated, filled and
// freed; a scratch buffer and an output buffer allocated once; three
// launches (foreign_kernels.cu), the last through cuLaunchKernel's `extra`
// parameter buffer. Checks each sum against the host's. Exit 0 ok, 1 a CUDA
// error or a wrong sum, 2 usage.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace {

struct ForeignScaleArgs {
  const float* src;
  float* dst;
  float scale;
  int n;
};

PFN_cuGetProcAddress_v12000 get_proc = nullptr;

template <typename F>
F entry(const char* name, int version) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult q;
  if (get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || fn == nullptr) {
    std::fprintf(stderr, "foreign_app: no %s in the driver\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(fn);
}

#define CHECK(call)                                                                \
  do {                                                                             \
    CUresult r_ = (call);                                                          \
    if (r_ != CUDA_SUCCESS) {                                                      \
      std::fprintf(stderr, "foreign_app: %s failed: CUresult %d\n", #call, int(r_)); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: foreign_app FATBIN\n");
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (image.empty()) {
    std::fprintf(stderr, "foreign_app: cannot read %s\n", argv[1]);
    return 2;
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "foreign_app: no libcuda.so.1: %s\n", dlerror());
    return 1;
  }
  get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) return 1;
  auto cuInit = entry<PFN_cuInit_v2000>("cuInit", 2000);
  auto cuDeviceGet = entry<PFN_cuDeviceGet_v2000>("cuDeviceGet", 2000);
  auto cuDevicePrimaryCtxRetain = entry<PFN_cuDevicePrimaryCtxRetain_v7000>("cuDevicePrimaryCtxRetain", 7000);
  auto cuDevicePrimaryCtxRelease = entry<PFN_cuDevicePrimaryCtxRelease_v11000>("cuDevicePrimaryCtxRelease", 11000);
  auto cuCtxSetCurrent = entry<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent", 4000);
  auto cuModuleLoadData = entry<PFN_cuModuleLoadData_v2000>("cuModuleLoadData", 2000);
  auto cuModuleGetFunction = entry<PFN_cuModuleGetFunction_v2000>("cuModuleGetFunction", 2000);
  auto cuModuleUnload = entry<PFN_cuModuleUnload_v2000>("cuModuleUnload", 2000);
  auto cuMemAlloc = entry<PFN_cuMemAlloc_v3020>("cuMemAlloc", 3020);
  auto cuMemFree = entry<PFN_cuMemFree_v3020>("cuMemFree", 3020);
  auto cuMemcpyHtoDAsync = entry<PFN_cuMemcpyHtoDAsync_v3020>("cuMemcpyHtoDAsync", 3020);
  auto cuMemcpyDtoHAsync = entry<PFN_cuMemcpyDtoHAsync_v3020>("cuMemcpyDtoHAsync", 3020);
  auto cuStreamCreate = entry<PFN_cuStreamCreate_v2000>("cuStreamCreate", 2000);
  auto cuStreamSynchronize = entry<PFN_cuStreamSynchronize_v2000>("cuStreamSynchronize", 2000);
  auto cuStreamDestroy = entry<PFN_cuStreamDestroy_v4000>("cuStreamDestroy", 4000);
  auto cuLaunchKernel = entry<PFN_cuLaunchKernel_v4000>("cuLaunchKernel", 4000);

  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUmodule module;
  CHECK(cuModuleLoadData(&module, image.data()));
  CUfunction scale_fn, partial_fn, reduce_fn;
  CHECK(cuModuleGetFunction(&scale_fn, module, "foreign_scale"));
  CHECK(cuModuleGetFunction(&partial_fn, module, "foreign_partial"));
  CHECK(cuModuleGetFunction(&reduce_fn, module, "foreign_reduce"));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, 0));

  const int kMaxN = 4096;
  CUdeviceptr scratch, scaled, out;
  CHECK(cuMemAlloc(&scratch, (kMaxN / 256 + 1) * sizeof(float)));
  CHECK(cuMemAlloc(&scaled, kMaxN * sizeof(float)));
  CHECK(cuMemAlloc(&out, sizeof(float)));
  // Lengths on both sides of 128 and 256 multiples pin the grids' divisors.
  for (int n : {384, 385, 512, 513, 1000}) {
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = float(i % 7);
    CUdeviceptr input;
    CHECK(cuMemAlloc(&input, n * sizeof(float)));
    CHECK(cuMemcpyHtoDAsync(input, x.data(), n * sizeof(float), stream));
    ForeignScaleArgs a{reinterpret_cast<const float*>(input), reinterpret_cast<float*>(scaled), 2.0f, n};
    void* scale_params[] = {&a};
    CHECK(cuLaunchKernel(scale_fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, stream, scale_params, nullptr));
    int blocks = (n + 255) / 256;
    void* partial_params[] = {&scaled, &scratch, &n};
    CHECK(cuLaunchKernel(partial_fn, blocks, 1, 1, 32, 1, 1, 0, stream, partial_params, nullptr));
    // The reduce's parameters travel packed in `extra` (CUDA driver API,
    // cuLaunchKernel: CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE).
    struct {
      CUdeviceptr scratch, out;
      int blocks;
      int pad;
    } packed{scratch, out, blocks, 0};
    size_t packed_size = 20;  // the parameter block: two pointers and an int
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                     CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel(reduce_fn, 1, 1, 1, 32, 1, 1, 0, stream, nullptr, extra));
    float sum = 0;
    CHECK(cuMemcpyDtoHAsync(&sum, out, sizeof sum, stream));
    CHECK(cuStreamSynchronize(stream));
    double want = 0;
    for (float v : x) want += 2.0 * v;
    if (std::fabs(sum - want) > 0.5) {
      std::fprintf(stderr, "foreign_app: n=%d: sum %f, expected %f\n", n, sum, want);
      return 1;
    }
    std::printf("n=%d sum=%.0f\n", n, sum);
    CHECK(cuMemFree(input));
  }
  CHECK(cuMemFree(scratch));
  CHECK(cuMemFree(scaled));
  CHECK(cuMemFree(out));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
