// The cuda device (cuda_device.h).
#include "kern-load/cuda/cuda_device.h"

#include <algorithm>
#include <cstring>

namespace kern::load {

Result<std::unique_ptr<Device>> make_cuda_device(const CudaDeviceOptions& options) {
  KERN_ASSIGN_OR_RETURN(auto d, cuda::CudaDevice::create(options));
  return std::unique_ptr<Device>(std::move(d));
}

}  // namespace kern::load

namespace kern::load::cuda {

Result<std::unique_ptr<CudaDevice>> CudaDevice::create(const CudaDeviceOptions& options) {
  std::unique_ptr<CudaDevice> d(new CudaDevice());
  KERN_ASSIGN_OR_RETURN(auto driver, Driver::load());
  d->driver_ = std::move(driver);
  const Driver& drv = *d->driver_;
  const DriverApi& a = drv.api();
  int count = 0;
  KERN_CU_CHECK(drv, a.cuDeviceGetCount(&count));
  if (options.ordinal < 0 || options.ordinal >= count)
    return make_error(ErrorKind::kDevice, "cuda device " + std::to_string(options.ordinal) + " requested, " +
                                              std::to_string(count) + " present");
  KERN_CU_CHECK(drv, a.cuDeviceGet(&d->device_, options.ordinal));
  KERN_CU_CHECK(drv, a.cuDevicePrimaryCtxRetain(&d->context_, d->device_));
  KERN_RETURN_IF_ERROR(d->bind_thread());
  KERN_CU_CHECK(drv, a.cuStreamCreate(&d->stream_, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 2; ++i) {
    KERN_CU_CHECK(drv, a.cuMemHostAlloc(&d->staging_[i], kStagingBytes, 0));
    KERN_CU_CHECK(drv, a.cuEventCreate(&d->staging_done_[i], CU_EVENT_DISABLE_TIMING));
  }
  KERN_CU_CHECK(drv, a.cuMemHostAlloc(&d->small_, kSmallSlots * kSmallCopyBytes, 0));
  for (CUevent& e : d->small_done_) KERN_CU_CHECK(drv, a.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  KERN_CU_CHECK(drv, a.cuMemHostAlloc(&d->readback_, kReadbackSlots * kReadbackSlotBytes, 0));
  for (CUevent& e : d->readback_done_) KERN_CU_CHECK(drv, a.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  for (CUevent& e : d->marks_) KERN_CU_CHECK(drv, a.cuEventCreate(&e, CU_EVENT_DEFAULT));
  char name[256] = {};
  KERN_CU_CHECK(drv, a.cuDeviceGetName(name, sizeof(name) - 1, d->device_));
  d->name_ = "cuda:" + std::to_string(options.ordinal) + " " + name;
  d->pdl_ = options.pdl;
  return d;
}

CudaDevice::~CudaDevice() {
  // A destructor cannot report: Executable::close() calls close() first and
  // reports its failures; here they are only possible for a bare device.
  (void)close();
}

Status CudaDevice::close() {
  if (!driver_ || closed_) return {};
  closed_ = true;
  const Driver& drv = *driver_;
  const DriverApi& a = drv.api();
  StatusJoin failures;  // each release is tried whatever failed before it
  failures.add(bind_thread());
  auto keep = [&](CUresult r, const char* call) { failures.add(drv.check(r, call)); };
  failures.add(abort_capture());
  if (stream_) keep(a.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  for (CUgraphExec g : graphs_) keep(a.cuGraphExecDestroy(g), "cuGraphExecDestroy");
  graphs_.clear();
  if (cublaslt_) failures.add(cublaslt_->close());
  cublaslt_.reset();
  if (workspace_) keep(a.cuMemFree(workspace_), "cuMemFree (cublasLt workspace)");
  if (nccl_) failures.add(nccl_->close());  // after the stream synchronize: no collective is in flight
  nccl_.reset();
  collective_.reset();
  for (CUdeviceptr p : {splitk_scratch_.ptr, gather_scratch_.ptr})
    if (p) keep(a.cuMemFree(p), "cuMemFree (tensor-parallel scratch)");
  for (CUdeviceptr p : retired_) keep(a.cuMemFree(p), "cuMemFree (tensor-parallel scratch)");
  splitk_scratch_ = gather_scratch_ = Scratch{};
  retired_.clear();
  for (auto& [aligned, base] : allocations_) keep(a.cuMemFree(base), "cuMemFree");
  allocations_.clear();
  for (Module& m : modules_) keep(a.cuModuleUnload(m.module), "cuModuleUnload");
  modules_.clear();
  for (int i = 0; i < 2; ++i) {
    if (staging_done_[i]) keep(a.cuEventDestroy(staging_done_[i]), "cuEventDestroy");
    if (staging_[i]) keep(a.cuMemFreeHost(staging_[i]), "cuMemFreeHost");
  }
  for (CUevent e : small_done_)
    if (e) keep(a.cuEventDestroy(e), "cuEventDestroy");
  for (CUevent e : readback_done_)
    if (e) keep(a.cuEventDestroy(e), "cuEventDestroy");
  for (CUevent e : marks_)
    if (e) keep(a.cuEventDestroy(e), "cuEventDestroy");
  if (small_) keep(a.cuMemFreeHost(small_), "cuMemFreeHost");
  if (readback_) keep(a.cuMemFreeHost(readback_), "cuMemFreeHost");
  if (stream_) keep(a.cuStreamDestroy(stream_), "cuStreamDestroy");
  if (context_) keep(a.cuDevicePrimaryCtxRelease(device_), "cuDevicePrimaryCtxRelease");
  return failures.status();
}

Result<DevicePtr> CudaDevice::allocate(uint64_t size_bytes, uint64_t align_bytes) {
  if (align_bytes < 256 || (align_bytes & (align_bytes - 1)) != 0)
    return make_error(ErrorKind::kDevice, "alignment " + std::to_string(align_bytes) +
                                              " B is not a power of two >= 256");
  const Driver& drv = *driver_;
  const DriverApi& a = drv.api();
  KERN_RETURN_IF_ERROR(bind_thread());
  // cuMemAlloc returns at least 256-byte aligned memory; larger alignments over-allocate.
  const uint64_t extra = align_bytes > 256 ? align_bytes : 0;
  const uint64_t bytes = std::max<uint64_t>(size_bytes, 1) + extra;
  CUdeviceptr base = 0;
  const CUresult r = a.cuMemAlloc(&base, bytes);
  if (r != CUDA_SUCCESS)
    return make_error(ErrorKind::kDevice, "cuMemAlloc(" + std::to_string(bytes) + " B): " + drv.describe(r));
  const DevicePtr aligned = (base + align_bytes - 1) & ~(align_bytes - 1);
  allocations_.emplace(aligned, base);
  KERN_CU_CHECK(drv, a.cuMemsetD8Async(aligned, 0, std::max<uint64_t>(size_bytes, 1), stream_));
  return aligned;
}

Status CudaDevice::free(DevicePtr ptr) {
  if (ptr == 0) return Status::ok_status();
  KERN_RETURN_IF_ERROR(bind_thread());
  auto it = allocations_.find(ptr);
  if (it == allocations_.end())
    return make_error(ErrorKind::kDevice, "freeing an address this device did not allocate");
  const Driver& drv = *driver_;
  KERN_CU_CHECK(drv, drv.api().cuStreamSynchronize(stream_));  // no launch may still use it
  KERN_CU_CHECK(drv, drv.api().cuMemFree(it->second));
  allocations_.erase(it);
  return Status::ok_status();
}

Status CudaDevice::copy_to_device(DevicePtr dst, const void* src, uint64_t size_bytes) {
  KERN_RETURN_IF_ERROR(bind_thread());
  // Chunks alternate between two pinned buffers: while one chunk's DMA runs
  // the next is memcpy'd into the other. The source may be reused on return.
  const Driver& drv = *driver_;
  const DriverApi& a = drv.api();
  const auto* p = static_cast<const uint8_t*>(src);
  if (size_bytes <= kSmallCopyBytes) {  // a small input: its own ring slot, reused kSmallSlots copies later
    const int s = next_small_;
    next_small_ = (next_small_ + 1) % kSmallSlots;
    uint8_t* slot = static_cast<uint8_t*>(small_) + static_cast<uint64_t>(s) * kSmallCopyBytes;
    KERN_CU_CHECK(drv, a.cuEventSynchronize(small_done_[s]));  // done long ago in practice
    std::memcpy(slot, p, size_bytes);
    KERN_CU_CHECK(drv, a.cuMemcpyHtoDAsync(dst, slot, size_bytes, stream_));
    KERN_CU_CHECK(drv, a.cuEventRecord(small_done_[s], stream_));
    return Status::ok_status();
  }
  for (uint64_t done = 0; done < size_bytes;) {
    const uint64_t n = std::min(kStagingBytes, size_bytes - done);
    const int s = next_staging_;
    next_staging_ ^= 1;
    KERN_CU_CHECK(drv, a.cuEventSynchronize(staging_done_[s]));  // its previous copy has finished
    std::memcpy(staging_[s], p + done, n);
    KERN_CU_CHECK(drv, a.cuMemcpyHtoDAsync(dst + done, staging_[s], n, stream_));
    KERN_CU_CHECK(drv, a.cuEventRecord(staging_done_[s], stream_));
    done += n;
  }
  return Status::ok_status();
}

Status CudaDevice::copy_to_host(void* dst, DevicePtr src, uint64_t size_bytes) {
  KERN_RETURN_IF_ERROR(bind_thread());
  const Driver& drv = *driver_;
  const DriverApi& a = drv.api();
  auto* p = static_cast<uint8_t*>(dst);
  for (uint64_t done = 0; done < size_bytes;) {
    const uint64_t n = std::min(kStagingBytes, size_bytes - done);
    KERN_CU_CHECK(drv, a.cuMemcpyDtoHAsync(staging_[0], src + done, n, stream_));
    KERN_CU_CHECK(drv, a.cuStreamSynchronize(stream_));  // also orders after every issued launch
    std::memcpy(p + done, staging_[0], n);
    done += n;
  }
  return Status::ok_status();
}

Status CudaDevice::read_async(uint32_t slot, DevicePtr src, uint64_t size_bytes) {
  KERN_RETURN_IF_ERROR(bind_thread());
  KERN_RETURN_IF_ERROR(check_readback(slot, size_bytes));
  const Driver& drv = *driver_;
  const DriverApi& a = drv.api();
  uint8_t* dst = static_cast<uint8_t*>(readback_) + slot * kReadbackSlotBytes;
  if (size_bytes > 0) KERN_CU_CHECK(drv, a.cuMemcpyDtoHAsync(dst, src, size_bytes, stream_));
  KERN_CU_CHECK(drv, a.cuEventRecord(readback_done_[slot], stream_));
  return Status::ok_status();
}

Result<std::span<const uint8_t>> CudaDevice::wait_read(uint32_t slot) {
  KERN_RETURN_IF_ERROR(bind_thread());
  KERN_RETURN_IF_ERROR(check_readback(slot, 0));
  KERN_CU_CHECK(*driver_, driver_->api().cuEventSynchronize(readback_done_[slot]));
  return std::span<const uint8_t>(static_cast<const uint8_t*>(readback_) + slot * kReadbackSlotBytes,
                                  kReadbackSlotBytes);
}

Status CudaDevice::record_mark(uint32_t mark) {
  KERN_RETURN_IF_ERROR(bind_thread());
  if (mark >= kTimingMarks)
    return make_error(ErrorKind::kDevice, "timing mark " + std::to_string(mark) + " is not below " +
                                              std::to_string(kTimingMarks));
  KERN_CU_CHECK(*driver_, driver_->api().cuEventRecord(marks_[mark], stream_));
  return Status::ok_status();
}

Result<double> CudaDevice::mark_elapsed_ms(uint32_t from, uint32_t to) {
  KERN_RETURN_IF_ERROR(bind_thread());
  if (from >= kTimingMarks || to >= kTimingMarks)
    return make_error(ErrorKind::kDevice, "timing mark " + std::to_string(std::max(from, to)) + " is not below " +
                                              std::to_string(kTimingMarks));
  const Driver& drv = *driver_;
  KERN_CU_CHECK(drv, drv.api().cuEventSynchronize(marks_[to]));
  float ms = 0;
  KERN_CU_CHECK(drv, drv.api().cuEventElapsedTime(&ms, marks_[from], marks_[to]));
  return static_cast<double>(ms);
}

Status CudaDevice::synchronize() {
  KERN_RETURN_IF_ERROR(bind_thread());
  KERN_CU_CHECK(*driver_, driver_->api().cuStreamSynchronize(stream_));
  return Status::ok_status();
}

Status CudaDevice::bind_thread() const {
  // The context this thread last made current through any CudaDevice.
  thread_local CUcontext current = nullptr;
  if (current == context_) [[likely]]
    return Status::ok_status();
  KERN_CU_CHECK(*driver_, driver_->api().cuCtxSetCurrent(context_));
  current = context_;
  return Status::ok_status();
}

Status CudaDevice::launch_error(uint32_t step, const char* call, CUresult r) const {
  const std::string sym = step < step_symbols_.size() ? step_symbols_[step] : "?";
  return make_error(ErrorKind::kDevice, "steps[" + std::to_string(step) + "] " + sym + ": " + call + ": " +
                                            driver_->describe(r));
}

Status CudaDevice::launch(uint32_t step, const LaunchDims& dims, void** kernel_params) {
  if (step >= steps_.size()) [[unlikely]]
    return make_error(ErrorKind::kKernel, "step " + std::to_string(step) + " was not loaded");
  KERN_RETURN_IF_ERROR(bind_thread());  // a thread-local compare after the first call
  StepFn& s = steps_[step];
  switch (s.op) {
    case ExternOpId::kGemmBf16TnSplitK: return launch_splitk(step, kernel_params, false);
    case ExternOpId::kGemmBf16TnSplitKF32: return launch_splitk(step, kernel_params, true);
    case ExternOpId::kAllReduceSumF32: return launch_allreduce(step, kernel_params, false);
    case ExternOpId::kAllReduceSumF32Bf16: return launch_allreduce(step, kernel_params, true);
    default: break;
  }
  if (s.op != ExternOpId::kNone) {
    // extern GEMM params (docs/kernels.md §10): a, w, c pointers then i32 m, n, k (ABI checked at load).
    uint64_t ptr[3];
    int32_t dim[3];
    for (int i = 0; i < 3; ++i) std::memcpy(&ptr[i], kernel_params[i], 8);
    for (int i = 0; i < 3; ++i) std::memcpy(&dim[i], kernel_params[3 + i], 4);
    KERN_RETURN_IF_ERROR(cublaslt_->gemm_bf16_tn(stream_, ptr[0], ptr[1], ptr[2], dim[0], dim[1], dim[2],
                                                 s.op == ExternOpId::kGemmBf16TnAcc),
                         "steps[" + std::to_string(step) + "] " + step_symbols_[step]);
    return Status::ok_status();
  }
  const DriverApi& a = driver_->api();
  if (dims.shared_mem_bytes > *s.max_dynamic_smem) [[unlikely]] {  // above the limit: raise it (never lowered)
    const CUresult r = a.cuFuncSetAttribute(s.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            static_cast<int>(dims.shared_mem_bytes));
    if (r != CUDA_SUCCESS) return launch_error(step, "cuFuncSetAttribute(max dynamic shared memory)", r);
    *s.max_dynamic_smem = dims.shared_mem_bytes;
  }
  const CUresult r = launch_kernel(a, s.fn, dims, stream_, kernel_params, s.pdl);
  if (r != CUDA_SUCCESS) [[unlikely]]
    return launch_error(step, s.pdl ? "cuLaunchKernelEx (programmatic dependent launch)" : "cuLaunchKernel", r);
  return Status::ok_status();
}

}  // namespace kern::load::cuda
