// The simulated driver's CUDA semantics, through kern-load's own driver table
// (Driver::load of the built libcuda.so.1): cuGetProcAddress versions,
// modules from the real fatbins (parameter records, static shared memory),
// stream order and synchronisation, the pinned-source race check, events,
// the rules of stream capture, parameters copied at capture, parameters
// packed in `extra`, and the current context per thread (a launch from a
// thread without one fails).
#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kern-load/cuda/cuda_driver.h"

namespace {

using kern::load::cuda::Driver;
using kern::load::cuda::DriverApi;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE(v != nullptr);
  return v;
}

/// The simulated driver, loaded once, with the primary context current on the main thread.
struct Sim {
  std::unique_ptr<Driver> driver;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  Sim() {
    auto d = Driver::load(env("KERN_SIM_DRIVER"));
    REQUIRE(d.ok());
    driver = std::move(d).value();
    const DriverApi& a = driver->api();
    REQUIRE(a.cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
    REQUIRE(a.cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    REQUIRE(a.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  }
  const DriverApi& api() const { return driver->api(); }
};

Sim& sim() {
  static Sim* s = new Sim();
  return *s;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

CUmodule load_module(const std::string& family) {
  static std::vector<std::string>* keep = new std::vector<std::string>();  // images outlive their modules
  keep->push_back(read_file(env("KERN_SIM_KERNELS_DIR") + "/" + family + ".fatbin"));
  CUmodule m = nullptr;
  REQUIRE(sim().api().cuModuleLoadData(&m, keep->back().data()) == CUDA_SUCCESS);
  return m;
}

/// The lines the driver appended to KERN_SIM_REPORT since the last call.
std::string take_report() {
  const std::string path = env("KERN_SIM_REPORT");
  std::string text;
  if (std::ifstream f(path); f.good()) text.assign(std::istreambuf_iterator<char>(f), {});
  std::ofstream(path, std::ios::trunc);
  return text;
}

CUdeviceptr alloc(size_t n) {
  CUdeviceptr p = 0;
  REQUIRE(sim().api().cuMemAlloc(&p, n) == CUDA_SUCCESS);
  return p;
}

}  // namespace

TEST_CASE("sim driver: cuGetProcAddress hands out the variant of the requested ABI version") {
  sim();
  void* lib = dlopen(env("KERN_SIM_DRIVER").c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  auto proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  REQUIRE(proc != nullptr);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult q{};
  CHECK(proc("cuStreamBeginCapture", &fn, 10010, 0, &q) == CUDA_SUCCESS);
  CHECK(q == CU_GET_PROC_ADDRESS_SUCCESS);
  CHECK(fn != nullptr);
  // v1 (no capture mode) is a different ABI, not simulated: never silently the v2 function.
  CHECK(proc("cuStreamBeginCapture", &fn, 10000, 0, &q) == CUDA_ERROR_NOT_FOUND);
  CHECK(q == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(proc("cuFuncGetParamInfo", &fn, 12000, 0, &q) == CUDA_ERROR_NOT_FOUND);
  CHECK(q == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK(proc("cuNoSuchEntry", &fn, 13000, 0, &q) == CUDA_ERROR_NOT_FOUND);
  CHECK(q == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

TEST_CASE("sim driver: a module from the real fatbin reports the cubin's parameter records and static shared memory") {
  const DriverApi& a = sim().api();
  CUmodule m = load_module("rmsnorm");
  CUfunction f = nullptr;
  REQUIRE(a.cuModuleGetFunction(&f, m, "kern_rmsnorm_bf16") == CUDA_SUCCESS);
  CHECK(a.cuModuleGetFunction(&f, m, "kern_no_such_kernel") == CUDA_ERROR_NOT_FOUND);
  REQUIRE(a.cuModuleGetFunction(&f, m, "kern_rmsnorm_bf16") == CUDA_SUCCESS);
  // docs/kernels.md: x, weight, y pointers, then i32 rows, i32 n, f32 eps.
  const size_t want[][2] = {{0, 8}, {8, 8}, {16, 8}, {24, 4}, {28, 4}, {32, 4}};
  for (size_t i = 0; i < 6; ++i) {
    size_t off = 99, size = 99;
    REQUIRE(a.cuFuncGetParamInfo(f, i, &off, &size) == CUDA_SUCCESS);
    CHECK(off == want[i][0]);
    CHECK(size == want[i][1]);
  }
  size_t off = 0, size = 0;
  CHECK(a.cuFuncGetParamInfo(f, 6, &off, &size) == CUDA_ERROR_INVALID_VALUE);  // past the last param
  int v = 0;
  REQUIRE(a.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS);
  CHECK(v == 1152);  // the size of .nv.shared.kern_rmsnorm_bf16
  REQUIRE(a.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS);
  CHECK(v == 48 * 1024 - 1152);
  REQUIRE(a.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_SUCCESS);
  CHECK(v == 48);  // the sm_90 cubin's EIATTR_REGCOUNT for kern_rmsnorm_bf16 (nvcc 13.0)
  CHECK(a.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448 - 1152) == CUDA_SUCCESS);
  CHECK(a.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448 - 1151) ==
        CUDA_ERROR_INVALID_VALUE);  // static + dynamic above the opt-in limit
  CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
  CHECK(a.cuFuncGetParamInfo(f, 0, &off, &size) == CUDA_ERROR_INVALID_HANDLE);
  std::string junk(256, 'x');
  CHECK(a.cuModuleLoadData(&m, junk.data()) == CUDA_ERROR_INVALID_IMAGE);
  take_report();
}

TEST_CASE("sim driver: stream work runs in order at synchronisation points, not at the call") {
  const DriverApi& a = sim().api();
  CUstream s = sim().stream;
  CUdeviceptr d = alloc(64);
  void* pinned = nullptr;
  REQUIRE(a.cuMemHostAlloc(&pinned, 64, 0) == CUDA_SUCCESS);
  auto* h = static_cast<uint8_t*>(pinned);
  std::memset(h, 0, 64);
  REQUIRE(a.cuMemsetD8Async(d, 7, 64, s) == CUDA_SUCCESS);
  REQUIRE(a.cuMemcpyDtoHAsync(h, d, 64, s) == CUDA_SUCCESS);
  CUevent e = nullptr;
  REQUIRE(a.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
  REQUIRE(a.cuEventRecord(e, s) == CUDA_SUCCESS);
  CHECK(h[0] == 0);  // queued, not yet executed
  REQUIRE(a.cuEventSynchronize(e) == CUDA_SUCCESS);
  CHECK(h[0] == 7);
  CHECK(h[63] == 7);
  // A pageable destination: the copy has completed when the call returns.
  uint8_t pageable[64] = {};
  REQUIRE(a.cuMemsetD8Async(d, 9, 64, s) == CUDA_SUCCESS);
  REQUIRE(a.cuMemcpyDtoHAsync(pageable, d, 64, s) == CUDA_SUCCESS);
  CHECK(pageable[5] == 9);
  // Out of bounds of the allocation: refused at the call.
  CHECK(a.cuMemcpyDtoHAsync(h, d + 32, 64, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(a.cuEventDestroy(e) == CUDA_SUCCESS);
  CHECK(a.cuMemFreeHost(pinned) == CUDA_SUCCESS);
  CHECK(a.cuMemFree(d) == CUDA_SUCCESS);
  CHECK(take_report().empty());
}

TEST_CASE("sim driver: events time the queue on a synthetic clock") {
  const DriverApi& a = sim().api();
  CUstream s = sim().stream;
  CUevent e0 = nullptr, e1 = nullptr, quiet = nullptr;
  REQUIRE(a.cuEventCreate(&e0, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  REQUIRE(a.cuEventCreate(&e1, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  REQUIRE(a.cuEventCreate(&quiet, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
  float ms = 0;
  CHECK(a.cuEventElapsedTime(&ms, e0, e1) == CUDA_ERROR_INVALID_HANDLE);  // never recorded
  CUdeviceptr d = alloc(1 << 20);
  REQUIRE(a.cuEventRecord(e0, s) == CUDA_SUCCESS);
  REQUIRE(a.cuMemsetD8Async(d, 0, 1 << 20, s) == CUDA_SUCCESS);
  REQUIRE(a.cuEventRecord(e1, s) == CUDA_SUCCESS);
  REQUIRE(a.cuEventRecord(quiet, s) == CUDA_SUCCESS);
  CHECK(a.cuEventElapsedTime(&ms, e0, e1) == CUDA_ERROR_NOT_READY);
  REQUIRE(a.cuEventSynchronize(e1) == CUDA_SUCCESS);
  REQUIRE(a.cuEventElapsedTime(&ms, e0, e1) == CUDA_SUCCESS);
  CHECK(ms > 0.0f);
  CHECK(a.cuEventElapsedTime(&ms, e0, quiet) == CUDA_ERROR_INVALID_HANDLE);  // timing disabled
  REQUIRE(a.cuMemFree(d) == CUDA_SUCCESS);
}

TEST_CASE("sim driver: stream capture records, copies parameters at capture, and enforces the capture rules") {
  const DriverApi& a = sim().api();
  CUstream s = sim().stream;
  CUmodule m = load_module("embedding");
  CUfunction f = nullptr;
  REQUIRE(a.cuModuleGetFunction(&f, m, "kern_embedding_bf16") == CUDA_SUCCESS);
  // embedding: out[t, :] = table[ids[t], :] (i64 ids, bf16 table [V, E]).
  const int32_t vocab = 4, hidden = 8;
  CUdeviceptr ids = alloc(8), table = alloc(vocab * hidden * 2), out_a = alloc(hidden * 2), out_b = alloc(hidden * 2);
  std::vector<uint16_t> tab(vocab * hidden);
  for (size_t i = 0; i < tab.size(); ++i) tab[i] = uint16_t(0x3F80 + i);  // distinct bf16 values
  const int64_t id = 2;
  REQUIRE(a.cuMemcpyHtoDAsync(table, tab.data(), tab.size() * 2, s) == CUDA_SUCCESS);
  REQUIRE(a.cuMemcpyHtoDAsync(ids, &id, 8, s) == CUDA_SUCCESS);
  REQUIRE(a.cuMemsetD8Async(out_a, 0, hidden * 2, s) == CUDA_SUCCESS);
  REQUIRE(a.cuMemsetD8Async(out_b, 0, hidden * 2, s) == CUDA_SUCCESS);
  REQUIRE(a.cuStreamSynchronize(s) == CUDA_SUCCESS);
  CUdeviceptr out = out_a;
  int32_t tokens = 1, h = hidden, v = vocab;
  void* params[] = {&ids, &table, &out, &tokens, &h, &v};

  REQUIRE(a.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
  CHECK(a.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_ERROR_ILLEGAL_STATE);
  REQUIRE(a.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS);
  CUgraph g = nullptr;
  REQUIRE(a.cuStreamEndCapture(s, &g) == CUDA_SUCCESS);
  out = out_b;  // after capture: the graph keeps the value it captured
  CUgraphExec exec = nullptr;
  REQUIRE(a.cuGraphInstantiateWithFlags(&exec, g, 0) == CUDA_SUCCESS);
  REQUIRE(a.cuGraphDestroy(g) == CUDA_SUCCESS);
  std::vector<uint16_t> got(hidden, 0);
  REQUIRE(a.cuStreamSynchronize(s) == CUDA_SUCCESS);
  REQUIRE(a.cuMemcpyDtoHAsync(got.data(), out_a, hidden * 2, s) == CUDA_SUCCESS);
  CHECK(got[0] == 0);  // capture recorded the launch, it did not run it
  REQUIRE(a.cuGraphLaunch(exec, s) == CUDA_SUCCESS);
  REQUIRE(a.cuMemcpyDtoHAsync(got.data(), out_a, hidden * 2, s) == CUDA_SUCCESS);
  for (int i = 0; i < hidden; ++i) CHECK(got[i] == tab[id * hidden + i]);
  REQUIRE(a.cuMemcpyDtoHAsync(got.data(), out_b, hidden * 2, s) == CUDA_SUCCESS);
  CHECK(got[0] == 0);

  SECTION("synchronising a capturing stream is refused and invalidates the capture") {
    REQUIRE(a.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    CHECK(a.cuStreamSynchronize(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(a.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, nullptr) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(a.cuStreamEndCapture(s, &g) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(g == nullptr);
  }
  SECTION("cuMemAlloc in a thread-local capture is a potentially unsafe call") {
    REQUIRE(a.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    CUdeviceptr p = 0;
    CHECK(a.cuMemAlloc(&p, 256) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(a.cuStreamEndCapture(s, &g) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  SECTION("an event recorded in a capture cannot be waited on") {
    CUevent e = nullptr;
    REQUIRE(a.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
    REQUIRE(a.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    REQUIRE(a.cuEventRecord(e, s) == CUDA_SUCCESS);
    REQUIRE(a.cuStreamEndCapture(s, &g) == CUDA_SUCCESS);
    CHECK(a.cuEventSynchronize(e) == CUDA_ERROR_CAPTURED_EVENT);
    CHECK(a.cuGraphDestroy(g) == CUDA_SUCCESS);
    CHECK(a.cuEventDestroy(e) == CUDA_SUCCESS);
  }
  SECTION("a thread-local capture is ended by the thread that began it") {
    REQUIRE(a.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    CUresult other = CUDA_SUCCESS;
    std::thread t([&] {
      a.cuCtxSetCurrent(sim().ctx);
      other = a.cuStreamEndCapture(s, &g);
    });
    t.join();
    CHECK(other == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    REQUIRE(a.cuStreamEndCapture(s, &g) == CUDA_SUCCESS);
    CHECK(a.cuGraphDestroy(g) == CUDA_SUCCESS);
  }
  SECTION("a launch from a thread that never made the context current fails, as on a GPU") {
    CUresult without = CUDA_SUCCESS, with = CUDA_ERROR_UNKNOWN;
    std::thread t([&] {
      without = a.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, nullptr);
      a.cuCtxSetCurrent(sim().ctx);
      with = a.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, nullptr);
    });
    t.join();
    CHECK(without == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(with == CUDA_SUCCESS);
    CHECK(a.cuStreamSynchronize(s) == CUDA_SUCCESS);
  }
  SECTION("launch geometry and shared memory beyond the limits are refused") {
    CHECK(a.cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, s, params, nullptr) == CUDA_ERROR_INVALID_VALUE);
    CHECK(a.cuLaunchKernel(f, 0, 1, 1, 64, 1, 1, 0, s, params, nullptr) == CUDA_ERROR_INVALID_VALUE);
    CHECK(a.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 64 * 1024, s, params, nullptr) == CUDA_ERROR_INVALID_VALUE);
    CHECK(a.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE);
  }
  CHECK(a.cuGraphExecDestroy(exec) == CUDA_SUCCESS);
  for (CUdeviceptr p : {ids, table, out_a, out_b}) CHECK(a.cuMemFree(p) == CUDA_SUCCESS);
  CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
  CHECK(take_report().empty());
}

// Last: its second section leaves the context faulted (sticky), as a GPU fault would.
TEST_CASE("sim driver: parameters packed in `extra` launch like kernelParams; a short or doubled parameter source is refused") {
  const DriverApi& a = sim().api();
  CUstream s = sim().stream;
  CUmodule m = load_module("embedding");
  CUfunction f = nullptr;
  REQUIRE(a.cuModuleGetFunction(&f, m, "kern_embedding_bf16") == CUDA_SUCCESS);
  // kern_embedding_bf16(token_ids, table, out, num_tokens, hidden, vocab): offsets 0, 8, 16, 24, 28, 32.
  const int hidden = 8, vocab = 4;
  std::vector<uint16_t> table(hidden * vocab);
  for (size_t i = 0; i < table.size(); ++i) table[i] = uint16_t(0x3f80 + i);  // distinct bf16 bit patterns
  const int64_t id = 2;
  CUdeviceptr ids = alloc(8), tab = alloc(table.size() * 2), out = alloc(hidden * 2);
  REQUIRE(a.cuMemcpyHtoDAsync(ids, &id, 8, s) == CUDA_SUCCESS);
  REQUIRE(a.cuMemcpyHtoDAsync(tab, table.data(), table.size() * 2, s) == CUDA_SUCCESS);
  struct {
    CUdeviceptr ids, table, out;
    int num_tokens, hidden, vocab;
  } packed{ids, tab, out, 1, hidden, vocab};
  size_t size = 36;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  REQUIRE(a.cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, nullptr, extra) == CUDA_SUCCESS);
  std::vector<uint16_t> got(hidden);
  REQUIRE(a.cuMemcpyDtoHAsync(got.data(), out, hidden * 2, s) == CUDA_SUCCESS);
  REQUIRE(a.cuStreamSynchronize(s) == CUDA_SUCCESS);
  CHECK(got == std::vector<uint16_t>(table.begin() + id * hidden, table.begin() + (id + 1) * hidden));
  // A buffer shorter than the parameter block, both sources at once, an unknown key.
  size_t short_size = 32;
  void* short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &short_size,
                         CU_LAUNCH_PARAM_END};
  CHECK(a.cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, nullptr, short_extra) == CUDA_ERROR_INVALID_VALUE);
  void* params[] = {&packed.ids, &packed.table, &packed.out, &packed.num_tokens, &packed.hidden, &packed.vocab};
  CHECK(a.cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, params, extra) == CUDA_ERROR_INVALID_VALUE);
  void* bad_key[] = {reinterpret_cast<void*>(0x7), &packed, CU_LAUNCH_PARAM_END};
  CHECK(a.cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, nullptr, bad_key) == CUDA_ERROR_INVALID_VALUE);
  CHECK(a.cuMemFree(ids) == CUDA_SUCCESS);
  CHECK(a.cuMemFree(tab) == CUDA_SUCCESS);
  CHECK(a.cuMemFree(out) == CUDA_SUCCESS);
  CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
  CHECK(take_report().empty());
}

TEST_CASE("sim driver: a host write into a pinned buffer before the copy that reads it completed is reported") {
  const DriverApi& a = sim().api();
  CUstream s = sim().stream;
  CUdeviceptr d = alloc(4096);
  void* pinned = nullptr;
  REQUIRE(a.cuMemHostAlloc(&pinned, 4096, 0) == CUDA_SUCCESS);
  std::memset(pinned, 1, 4096);
  SECTION("the host waits before reusing the buffer: no report") {
    REQUIRE(a.cuMemcpyHtoDAsync(d, pinned, 4096, s) == CUDA_SUCCESS);
    REQUIRE(a.cuStreamSynchronize(s) == CUDA_SUCCESS);
    std::memset(pinned, 2, 4096);
    CHECK(take_report().empty());
  }
  SECTION("the host overwrites it while the copy is queued: reported, and the stream fails") {
    take_report();
    REQUIRE(a.cuMemcpyHtoDAsync(d, pinned, 4096, s) == CUDA_SUCCESS);
    static_cast<uint8_t*>(pinned)[100] = 2;
    // The context is faulted from here on, as after a GPU fault; this is the last case using it.
    CHECK(a.cuStreamSynchronize(s) == CUDA_ERROR_LAUNCH_FAILED);
    CHECK(take_report().find("the host wrote the pinned source") != std::string::npos);
  }
}
