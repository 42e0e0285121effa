// The simulated driver's entry points, each with CUDA's documented argument
// checks and semantics over driver_state.h (the ones kern-load uses, at the
// ABI versions cuda_driver.h requests; driver_proc.cpp hands them out).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "test/sim/driver/driver_api.h"
#include "test/sim/driver/driver_state.h"

namespace kern::sim::api {

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

/// The current context, checked: CUDA_ERROR_NOT_INITIALIZED before cuInit,
/// CUDA_ERROR_INVALID_CONTEXT when this thread made none current (or it was
/// destroyed), the context's sticky error after a fault.
CUresult need_ctx(Context*& out) {
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  Context* c = current_context();
  if (c == nullptr || !c->active) return CUDA_ERROR_INVALID_CONTEXT;
  out = c;
  return c->sticky;
}

/// `h` as a stream of `ctx` (0: the legacy default stream), or null.
Stream* stream_of(Context* ctx, CUstream h) {
  if (h == nullptr) return ctx->null_stream;
  auto* s = reinterpret_cast<Stream*>(h);
  return ctx->streams.count(s) ? s : nullptr;
}

/// A stream handle of the (only) context, whatever is current.
Stream* any_stream(CUstream h) {
  Context& c = state().primary;
  if (!c.active) return nullptr;
  return stream_of(&c, h);
}

Event* event_of(CUevent h) {
  auto* e = reinterpret_cast<Event*>(h);
  return state().primary.events.count(e) ? e : nullptr;
}

#define SIM_LOCK Lock lock_(state().mu)
#define SIM_CTX(ctx)                              \
  Context* ctx = nullptr;                         \
  if (CUresult r_ = need_ctx(ctx); r_ != CUDA_SUCCESS) return r_

void activate(Context& c) {
  c.active = true;
  c.sticky = CUDA_SUCCESS;
  c.null_stream = new Stream();
  c.null_stream->ctx = &c;
  c.streams.insert(c.null_stream);
}

/// Destroys every resource of a context whose last reference went away.
void deactivate(Context& c) {
  DriverState& st = state();
  run_all(&c);
  size_t leaked_streams = c.streams.size() - 1, leaked_events = c.events.size(), leaked_modules = c.modules.size();
  size_t leaked_graphs = c.graphs.size() + c.execs.size();
  size_t leaked_allocs = st.device_allocs.size(), leaked_host = st.host_allocs.size();
  const char* leaks = std::getenv("KERN_SIM_LEAKS");
  if (leaks && std::strcmp(leaks, "report") == 0 &&
      leaked_streams + leaked_events + leaked_modules + leaked_graphs + leaked_allocs + leaked_host > 0)
    report("primary context released with live resources: " + std::to_string(leaked_allocs) + " device allocations, " +
           std::to_string(leaked_host) + " pinned host allocations, " + std::to_string(leaked_streams) + " streams, " +
           std::to_string(leaked_events) + " events, " + std::to_string(leaked_modules) + " modules, " +
           std::to_string(leaked_graphs) + " graphs");
  for (auto& [base, bytes] : st.device_allocs) {
    shadow_free(base);
    std::free(reinterpret_cast<void*>(base));
  }
  st.device_allocs.clear();
  for (auto& [base, bytes] : st.host_allocs) std::free(reinterpret_cast<void*>(base));
  st.host_allocs.clear();
  for (Stream* s : c.streams) delete s;
  c.streams.clear();
  for (Event* e : c.events) delete e;
  c.events.clear();
  for (Module* m : c.modules) {  // kept: see Module::unloaded
    m->unloaded = true;
    for (auto& fn : m->functions) st.functions.erase(fn.get());
  }
  c.modules.clear();
  for (Graph* g : c.graphs) delete g;
  for (Graph* g : c.execs) delete g;
  c.graphs.clear();
  c.execs.clear();
  c.null_stream = nullptr;
  c.active = false;
}

bool dims_ok(const unsigned g[3], const unsigned b[3]) {
  static const unsigned max_grid[3] = {2147483647u, 65535u, 65535u};
  static const unsigned max_block[3] = {1024u, 1024u, 64u};
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (g[i] == 0 || b[i] == 0 || g[i] > max_grid[i] || b[i] > max_block[i]) return false;
    threads *= b[i];
  }
  return threads <= uint64_t(kMaxThreadsPerBlock);
}

/// cuLaunchKernel and cuLaunchKernelEx after their own argument decoding.
CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shared, CUstream h,
                void** params, void** extra, bool pdl, const char* call) {
  SIM_CTX(ctx);
  Stream* s = stream_of(ctx, h);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto fail = [&](CUresult r) {  // a failed call invalidates the capture it was made into
    if (s->capturing) s->capture_invalid = true;
    return r;
  };
  auto* fn = reinterpret_cast<Function*>(f);
  if (!state().functions.count(fn) || fn->module->unloaded || fn->module->ctx != ctx)
    return fail(CUDA_ERROR_INVALID_HANDLE);
  if (!dims_ok(grid, block)) return fail(CUDA_ERROR_INVALID_VALUE);
  if (int64_t(shared) > fn->max_dynamic_shared) return fail(CUDA_ERROR_INVALID_VALUE);
  // `extra` (CUDA driver API, cuLaunchKernel): the parameters packed in one
  // buffer, CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE pairs ended by
  // CU_LAUNCH_PARAM_END; exclusive with kernelParams.
  const void* packed = nullptr;
  size_t packed_size = 0;
  bool have_size = false;
  if (extra != nullptr) {
    if (params != nullptr) return fail(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (i >= 64) return fail(CUDA_ERROR_INVALID_VALUE);  // no END among the first pairs
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        packed = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        if (extra[i + 1] == nullptr) return fail(CUDA_ERROR_INVALID_VALUE);
        packed_size = *static_cast<const size_t*>(extra[i + 1]);
        have_size = true;
      } else {
        return fail(CUDA_ERROR_INVALID_VALUE);
      }
    }
    if (!fn->entry.params.empty() && (packed == nullptr || !have_size)) return fail(CUDA_ERROR_INVALID_VALUE);
  } else if (params == nullptr && !fn->entry.params.empty()) {
    return fail(CUDA_ERROR_INVALID_VALUE);
  }
  if (inject("launch")) return fail(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  if (s->capturing && !s->capture_invalid && inject("capture")) return fail(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  auto w = std::make_shared<Work>();
  w->kind = Work::Kind::kKernel;
  w->what = std::string(call) + " " + fn->entry.name;
  w->fn = fn;
  for (int i = 0; i < 3; ++i) w->launch.grid[i] = grid[i], w->launch.block[i] = block[i];
  w->launch.dynamic_shared_bytes = shared;
  w->launch.pdl = pdl;
  w->launch.num_params = static_cast<uint32_t>(fn->entry.params.size());
  uint32_t block_bytes = fn->entry.param_block_bytes;
  for (const CubinParam& p : fn->entry.params) block_bytes = std::max(block_bytes, p.offset + p.size);
  w->param_bytes.assign(block_bytes, 0);
  if (extra != nullptr) {
    uint32_t needed = 0;  // the packed buffer must hold every parameter
    for (const CubinParam& p : fn->entry.params) needed = std::max(needed, p.offset + p.size);
    if (packed_size < needed) return fail(CUDA_ERROR_INVALID_VALUE);
    if (needed > 0) std::memcpy(w->param_bytes.data(), packed, std::min<size_t>(packed_size, block_bytes));
  } else {
    for (size_t i = 0; i < fn->entry.params.size(); ++i)  // the values are copied now (CUDA: at the call)
      std::memcpy(w->param_bytes.data() + fn->entry.params[i].offset, params[i], fn->entry.params[i].size);
  }
  return enqueue(s, std::move(w));
}

CUresult copy(Work::Kind kind, uint64_t dst, uint64_t src, size_t n, CUstream h, const char* call) {
  SIM_CTX(ctx);
  Stream* s = stream_of(ctx, h);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (n == 0) return CUDA_SUCCESS;
  auto w = std::make_shared<Work>();
  w->kind = kind;
  w->what = call;
  w->dst = dst, w->src = src, w->bytes = n;
  bool sync = false;
  switch (kind) {
    case Work::Kind::kCopyHtoD:
      if (!is_device(dst, n) || src == 0) return CUDA_ERROR_INVALID_VALUE;
      w->host_pinned = is_pinned(src, n);
      if (!w->host_pinned) {  // pageable: staged at the call, so the source is reusable on return
        const auto* p = reinterpret_cast<const uint8_t*>(src);
        w->staged.assign(p, p + n);
      }
      break;
    case Work::Kind::kCopyDtoH:
      if (!is_device(src, n) || dst == 0) return CUDA_ERROR_INVALID_VALUE;
      w->host_pinned = is_pinned(dst, n);
      sync = !w->host_pinned && !s->capturing;  // to pageable memory: returns once the copy has completed
      break;
    case Work::Kind::kCopyDtoD:
      if (!is_device(src, n) || !is_device(dst, n)) return CUDA_ERROR_INVALID_VALUE;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult r = enqueue(s, std::move(w));
  if (r == CUDA_SUCCESS && sync) r = run_stream(s, s->next_seq - 1);
  return r;
}

}  // namespace

// ---- errors, init, device ---------------------------------------------------

CUresult cuGetErrorString(CUresult e, const char** out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = error_text(e, false);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult e, const char** out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = error_text(e, true);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned flags) {
  SIM_LOCK;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  DriverState& st = state();
  if (!st.initialised) {
    const char* seed = std::getenv("KERN_SIM_SEED");
    st.seed = seed ? std::strtoull(seed, nullptr, 10) : 1;
    st.initialised = true;
  }
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* v) {
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *v = kSimDriverVersion;
  return CUDA_SUCCESS;
}

/// $KERN_SIM_DEVICES (1..8, default 1): how many GPUs the simulation shows.
/// Each rank of `kern-run --tp N` is its own process with its own simulated
/// GPU, so every ordinal is the same device (handle 0) in a process.
static int sim_device_count() {
  const char* v = std::getenv("KERN_SIM_DEVICES");
  const int n = v && *v ? std::atoi(v) : 1;
  return n < 1 ? 1 : (n > 8 ? 8 : n);
}

CUresult cuDeviceGetCount(int* n) {
  SIM_LOCK;
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  *n = sim_device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  SIM_LOCK;
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= sim_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;  // every ordinal is this process's one simulated GPU (sim_device_count)
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  const char* n = "kern simulated GPU (sm_90)";
  std::strncpy(name, n, size_t(len));
  name[len - 1] = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = kSimArch / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = kSimArch % 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = kMaxThreadsPerBlock; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = kSharedPerBlock; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = kSharedPerBlockOptin; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 * 1024 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
    default: return CUDA_ERROR_INVALID_VALUE;  // not simulated: a caller's new need shows here
  }
  return CUDA_SUCCESS;
}

// ---- contexts ------------------------------------------------------------------

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice d) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  Context& c = state().primary;
  if (c.refcount++ == 0) activate(c);
  *ctx = reinterpret_cast<CUcontext>(&c);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  Context& c = state().primary;
  if (c.refcount == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--c.refcount == 0) deactivate(c);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  auto* c = reinterpret_cast<Context*>(ctx);
  if (c != nullptr && (c != &state().primary || !c->active)) return CUDA_ERROR_INVALID_CONTEXT;
  current_context() = c;
  return CUDA_SUCCESS;
}

// ---- streams -------------------------------------------------------------------

CUresult cuStreamCreate(CUstream* out, unsigned flags) {
  SIM_LOCK;
  SIM_CTX(ctx);
  if (out == nullptr || (flags & ~unsigned(CU_STREAM_NON_BLOCKING)) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* s = new Stream();
  s->ctx = ctx;
  s->flags = flags;
  ctx->streams.insert(s);
  *out = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream h) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  Stream* s = h ? any_stream(h) : nullptr;
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  run_stream(s, UINT64_MAX);  // CUDA releases the stream once its work completes
  for (Event* e : s->ctx->events)
    if (e->stream == s) e->stream = nullptr;
  s->ctx->streams.erase(s);
  delete s;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream h) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  Stream* s = any_stream(h);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capturing) {  // never legal on a capturing stream: the capture is invalidated
    s->capture_invalid = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (unsafe_call_in_capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return run_stream(s, UINT64_MAX);
}

// ---- memory --------------------------------------------------------------------

CUresult cuMemAlloc(CUdeviceptr* out, size_t bytes) {
  SIM_LOCK;
  SIM_CTX(ctx);
  if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (unsafe_call_in_capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (inject("alloc")) return CUDA_ERROR_OUT_OF_MEMORY;
  const size_t rounded = (bytes + 255) & ~size_t(255);
  void* p = std::aligned_alloc(256, rounded);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(p, 0xFF, rounded);  // poison: NaN as bf16 and f32, so a read of unwritten memory shows
  const auto base = reinterpret_cast<uint64_t>(p);
  state().device_allocs[base] = bytes;
  shadow_alloc(base, bytes);
  *out = base;
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr p) {
  SIM_LOCK;
  SIM_CTX(ctx);
  if (unsafe_call_in_capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  auto& allocs = state().device_allocs;
  auto it = allocs.find(p);
  if (it == allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  run_all(ctx);  // freeing waits for the work that may still use it
  allocs.erase(it);
  shadow_free(p);
  std::free(reinterpret_cast<void*>(p));
  return ctx->sticky;
}

CUresult cuMemHostAlloc(void** out, size_t bytes, unsigned flags) {
  SIM_LOCK;
  SIM_CTX(ctx);
  const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (out == nullptr || bytes == 0 || (flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (unsafe_call_in_capture()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  const size_t rounded = (bytes + 4095) & ~size_t(4095);
  void* p = std::aligned_alloc(4096, rounded);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(p, 0xFF, rounded);
  state().host_allocs[reinterpret_cast<uint64_t>(p)] = bytes;
  *out = p;
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* p) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  auto& allocs = state().host_allocs;
  auto it = allocs.find(reinterpret_cast<uint64_t>(p));
  if (it == allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  if (state().primary.active) run_all(&state().primary);  // queued copies may still use it
  allocs.erase(it);
  std::free(p);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  SIM_LOCK;
  return copy(Work::Kind::kCopyHtoD, dst, reinterpret_cast<uint64_t>(src), n, s, "cuMemcpyHtoDAsync");
}

CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  SIM_LOCK;
  return copy(Work::Kind::kCopyDtoH, reinterpret_cast<uint64_t>(dst), src, n, s, "cuMemcpyDtoHAsync");
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  SIM_LOCK;
  return copy(Work::Kind::kCopyDtoD, dst, src, n, s, "cuMemcpyDtoDAsync");
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream h) {
  SIM_LOCK;
  SIM_CTX(ctx);
  Stream* s = stream_of(ctx, h);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (n == 0) return CUDA_SUCCESS;
  if (!is_device(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  auto w = std::make_shared<Work>();
  w->kind = Work::Kind::kMemset;
  w->what = "cuMemsetD8Async";
  w->dst = dst, w->bytes = n, w->value = value;
  return enqueue(s, std::move(w));
}

// ---- events --------------------------------------------------------------------

CUresult cuEventCreate(CUevent* out, unsigned flags) {
  SIM_LOCK;
  SIM_CTX(ctx);
  const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (out == nullptr || (flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new Event();
  e->ctx = ctx;
  e->flags = flags;
  ctx->events.insert(e);
  *out = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent h, CUstream hs) {
  SIM_LOCK;
  SIM_CTX(ctx);
  Event* e = event_of(h);
  Stream* s = stream_of(ctx, hs);
  if (e == nullptr || s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return enqueue_record(s, e);
}

CUresult cuEventSynchronize(CUevent h) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  Event* e = event_of(h);
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (e->captured) return CUDA_ERROR_CAPTURED_EVENT;
  if (!e->recorded || e->stream == nullptr) return e->ctx->sticky;  // never recorded: nothing to wait for
  return run_stream(e->stream, e->seq);
}

CUresult cuEventElapsedTime(float* ms, CUevent h0, CUevent h1) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  Event* a = event_of(h0);
  Event* b = event_of(h1);
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (a == nullptr || b == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (a->captured || b->captured) return CUDA_ERROR_CAPTURED_EVENT;
  if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->done || !b->done) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>((b->time_us - a->time_us) / 1000.0);
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent h) {
  SIM_LOCK;
  if (!state().initialised) return CUDA_ERROR_NOT_INITIALIZED;
  Event* e = event_of(h);
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  for (Stream* s : e->ctx->streams)  // a queued record of it completes without it
    for (Pending& p : s->queue)
      if (p.event == e) p.event = nullptr;
  e->ctx->events.erase(e);
  delete e;
  return CUDA_SUCCESS;
}

// ---- modules and functions -------------------------------------------------------

CUresult cuModuleLoadData(CUmodule* out, const void* image) {
  SIM_LOCK;
  SIM_CTX(ctx);
  if (out == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CubinImage cubin;
  const std::string err = parse_kernel_image(image, kSimArch, cubin);
  if (!err.empty()) {
    report("cuModuleLoadData: " + err);
    return err.find("no sm_") == 0 || err.find("cubin is for") == 0 ? CUDA_ERROR_NO_BINARY_FOR_GPU
                                                                    : CUDA_ERROR_INVALID_IMAGE;
  }
  auto* m = new Module();
  m->ctx = ctx;
  for (CubinEntry& e : cubin.entries) {
    auto fn = std::make_unique<Function>();
    fn->module = m;
    fn->kernel = find_emulated_kernel(e.name);
    if (fn->kernel != nullptr) {
      const std::vector<uint32_t> sizes = fn->kernel->param_sizes();
      bool same = sizes.empty() || sizes.size() == e.params.size();
      for (size_t i = 0; same && !sizes.empty() && i < sizes.size(); ++i) same = sizes[i] == e.params[i].size;
      if (!same)
        report("cuModuleLoadData: " + e.name + ": the emulated kernel's parameters differ from the cubin's " +
               std::to_string(e.params.size()) + " records (the emulator was built from other sources)");
    }
    fn->max_dynamic_shared = kSharedPerBlock - int(e.static_shared_bytes);
    fn->entry = std::move(e);
    state().functions.insert(fn.get());
    m->functions.push_back(std::move(fn));
  }
  ctx->modules.insert(m);
  *out = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule h) {
  SIM_LOCK;
  SIM_CTX(ctx);
  auto* m = reinterpret_cast<Module*>(h);
  if (!ctx->modules.count(m)) return CUDA_ERROR_INVALID_HANDLE;
  ctx->modules.erase(m);
  for (auto& fn : m->functions) state().functions.erase(fn.get());
  m->unloaded = true;  // kept allocated: see Module::unloaded
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* out, CUmodule h, const char* name) {
  SIM_LOCK;
  SIM_CTX(ctx);
  auto* m = reinterpret_cast<Module*>(h);
  if (out == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!ctx->modules.count(m)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& fn : m->functions)
    if (fn->entry.name == name) {
      *out = reinterpret_cast<CUfunction>(fn.get());
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  SIM_LOCK;
  auto* fn = reinterpret_cast<Function*>(f);
  if (!state().functions.count(fn)) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= fn->entry.params.size()) return CUDA_ERROR_INVALID_VALUE;  // past the last param
  if (offset) *offset = fn->entry.params[index].offset;
  if (size) *size = fn->entry.params[index].size;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int* v, CUfunction_attribute a, CUfunction f) {
  SIM_LOCK;
  auto* fn = reinterpret_cast<Function*>(f);
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!state().functions.count(fn)) return CUDA_ERROR_INVALID_HANDLE;
  switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = kMaxThreadsPerBlock; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = int(fn->entry.static_shared_bytes); break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = int(fn->entry.num_regs); break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = kSimArch; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = kSimArch; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = fn->max_dynamic_shared; break;
    default: return CUDA_ERROR_INVALID_VALUE;  // not simulated
  }
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int value) {
  SIM_LOCK;
  auto* fn = reinterpret_cast<Function*>(f);
  if (!state().functions.count(fn)) return CUDA_ERROR_INVALID_HANDLE;
  if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;  // not simulated
  // The opt-in limit covers static and dynamic shared memory together.
  if (value < 0 || int64_t(value) + fn->entry.static_shared_bytes > kSharedPerBlockOptin) return CUDA_ERROR_INVALID_VALUE;
  fn->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

// ---- launches ------------------------------------------------------------------

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void** params, void** extra) {
  SIM_LOCK;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch(f, grid, block, shared, s, params, extra, false, "cuLaunchKernel");
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  SIM_LOCK;
  if (config == nullptr || (config->numAttrs > 0 && config->attrs == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  bool pdl = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& at = config->attrs[i];
    if (at.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) {
      pdl = at.value.programmaticStreamSerializationAllowed != 0;
    } else if (at.id != CU_LAUNCH_ATTRIBUTE_PRIORITY) {
      report("cuLaunchKernelEx: launch attribute " + std::to_string(int(at.id)) + " is not simulated");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
  return launch(f, grid, block, config->sharedMemBytes, config->hStream, params, extra, pdl, "cuLaunchKernelEx");
}

// ---- graphs --------------------------------------------------------------------

CUresult cuStreamBeginCapture(CUstream h, CUstreamCaptureMode mode) {
  SIM_LOCK;
  SIM_CTX(ctx);
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  Stream* s = stream_of(ctx, h);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (s == ctx->null_stream) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot be captured
  if (s->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  s->capturing = true;
  s->capture_invalid = false;
  s->capture_mode = mode;
  s->capture_thread = this_thread_id();
  s->capture = std::make_unique<Graph>();
  s->capture->ctx = ctx;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream h, CUgraph* out) {
  SIM_LOCK;
  SIM_CTX(ctx);
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = stream_of(ctx, h);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!s->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  if (s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED && s->capture_thread != this_thread_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  s->capturing = false;
  std::unique_ptr<Graph> g = std::move(s->capture);
  *out = nullptr;
  if (s->capture_invalid || inject("end_capture")) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  ctx->graphs.insert(g.get());
  *out = reinterpret_cast<CUgraph>(g.release());
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph h, unsigned long long flags) {
  SIM_LOCK;
  SIM_CTX(ctx);
  auto* g = reinterpret_cast<Graph*>(h);
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!ctx->graphs.count(g)) return CUDA_ERROR_INVALID_HANDLE;
  const unsigned long long known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                   CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  if (flags & ~known) return CUDA_ERROR_INVALID_VALUE;
  if (inject("instantiate")) return CUDA_ERROR_OUT_OF_MEMORY;
  for (const auto& n : g->nodes)
    if (n->kind == Work::Kind::kKernel && n->fn->module->unloaded) return CUDA_ERROR_INVALID_VALUE;
  auto* exec = new Graph(*g);  // an independent copy: the graph may be destroyed or changed afterwards
  ctx->execs.insert(exec);
  *out = reinterpret_cast<CUgraphExec>(exec);
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec h, CUstream hs) {
  SIM_LOCK;
  SIM_CTX(ctx);
  auto* exec = reinterpret_cast<Graph*>(h);
  if (!ctx->execs.count(exec)) return CUDA_ERROR_INVALID_HANDLE;
  Stream* s = stream_of(ctx, hs);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (inject("graph_launch")) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  for (const auto& n : exec->nodes)  // in capture order; PDL nodes keep their programmatic edge
    if (CUresult r = enqueue(s, n); r != CUDA_SUCCESS) return r;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec h) {
  SIM_LOCK;
  SIM_CTX(ctx);
  auto* exec = reinterpret_cast<Graph*>(h);
  if (!ctx->execs.erase(exec)) return CUDA_ERROR_INVALID_HANDLE;
  delete exec;  // queued replays hold their nodes (shared), not the exec
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph h) {
  SIM_LOCK;
  SIM_CTX(ctx);
  auto* g = reinterpret_cast<Graph*>(h);
  if (!ctx->graphs.erase(g)) return CUDA_ERROR_INVALID_HANDLE;
  delete g;
  return CUDA_SUCCESS;
}

// ---- for the simulated cublasLt (sim_hooks.h) -----------------------------------

CUresult enqueue_host_work(CUstream h, const std::string& what, std::function<std::string()> work) {
  SIM_LOCK;
  SIM_CTX(ctx);
  Stream* s = stream_of(ctx, h);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto w = std::make_shared<Work>();
  w->kind = Work::Kind::kHost;
  w->what = what;
  w->host = std::move(work);
  return enqueue(s, std::move(w));
}

bool device_range(uint64_t p, uint64_t n) {
  SIM_LOCK;
  return is_device(p, n);
}

}  // namespace kern::sim::api
