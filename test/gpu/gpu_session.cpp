// GpuSession (gpu_session.h).
#include "test/gpu/gpu_session.h"

#include <fstream>
#include <iterator>

namespace kern::gpu_test {

Result<std::unique_ptr<GpuSession>> GpuSession::open(int ordinal) {
  std::unique_ptr<GpuSession> s(new GpuSession());
  auto driver = load::cuda::Driver::load();
  if (!driver.ok()) return driver.error();
  s->driver_ = std::move(driver.value());
  const auto& d = *s->driver_;
  const auto& a = d.api();
  int count = 0;
  KERN_CU_CHECK(d, a.cuDeviceGetCount(&count));
  if (ordinal >= count)
    return make_error(ErrorKind::kDevice, "cuda device " + std::to_string(ordinal) + " requested, " +
                                              std::to_string(count) + " present");
  KERN_CU_CHECK(d, a.cuDeviceGet(&s->device_, ordinal));
  KERN_CU_CHECK(d, a.cuDevicePrimaryCtxRetain(&s->context_, s->device_));
  KERN_CU_CHECK(d, a.cuCtxSetCurrent(s->context_));
  KERN_CU_CHECK(d, a.cuStreamCreate(&s->stream_, CU_STREAM_NON_BLOCKING));
  KERN_CU_CHECK(d, a.cuEventCreate(&s->start_, CU_EVENT_DEFAULT));
  KERN_CU_CHECK(d, a.cuEventCreate(&s->stop_, CU_EVENT_DEFAULT));
  char name[256] = {};
  KERN_CU_CHECK(d, a.cuDeviceGetName(name, sizeof(name) - 1, s->device_));
  int major = 0, minor = 0;
  KERN_CU_CHECK(d, a.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, s->device_));
  KERN_CU_CHECK(d, a.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, s->device_));
  s->description_ = std::string(name) + " (sm_" + std::to_string(major * 10 + minor) + ", driver " +
                    std::to_string(d.version()) + ")";
  return s;
}

GpuSession::~GpuSession() {
  if (!driver_) return;
  const auto& a = driver_->api();
  if (stream_) (void)a.cuStreamSynchronize(stream_);
  for (CUdeviceptr p : allocations_) (void)a.cuMemFree(p);
  for (auto& [path, m] : modules_) (void)a.cuModuleUnload(m);
  if (start_) (void)a.cuEventDestroy(start_);
  if (stop_) (void)a.cuEventDestroy(stop_);
  if (stream_) (void)a.cuStreamDestroy(stream_);
  if (context_) (void)a.cuDevicePrimaryCtxRelease(device_);
}

Result<CUdeviceptr> GpuSession::alloc(uint64_t size_bytes) {
  CUdeviceptr p = 0;
  KERN_CU_CHECK(*driver_, driver_->api().cuMemAlloc(&p, size_bytes ? size_bytes : 1));
  allocations_.push_back(p);
  return p;
}

Status GpuSession::upload(CUdeviceptr dst, const void* src, uint64_t size_bytes) {
  const auto& a = driver_->api();
  KERN_CU_CHECK(*driver_, a.cuMemcpyHtoDAsync(dst, src, size_bytes, stream_));
  return synchronize();
}

Status GpuSession::download(void* dst, CUdeviceptr src, uint64_t size_bytes) {
  const auto& a = driver_->api();
  KERN_CU_CHECK(*driver_, a.cuMemcpyDtoHAsync(dst, src, size_bytes, stream_));
  return synchronize();
}

Result<CUfunction> GpuSession::function(const std::string& path, const std::string& symbol) {
  const auto& a = driver_->api();
  auto it = modules_.find(path);
  if (it == modules_.end()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorKind::kIo, path + ": cannot open");
    std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CUmodule m = nullptr;
    const Status st = driver_->check(a.cuModuleLoadData(&m, image.data()), "cuModuleLoadData");
    if (!st.ok()) return st.error().with_context(path);
    it = modules_.emplace(path, m).first;
  }
  CUfunction f = nullptr;
  const Status st = driver_->check(a.cuModuleGetFunction(&f, it->second, symbol.c_str()), "cuModuleGetFunction");
  if (!st.ok()) return st.error().with_context(path + ": " + symbol);
  return f;
}

Status GpuSession::launch(CUfunction f, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_mem,
                          void** params) {
  KERN_CU_CHECK(*driver_, driver_->api().cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1],
                                                          block[2], shared_mem, stream_, params, nullptr));
  return Status::ok_status();
}

Status GpuSession::synchronize() {
  KERN_CU_CHECK(*driver_, driver_->api().cuStreamSynchronize(stream_));
  return Status::ok_status();
}

}  // namespace kern::gpu_test
