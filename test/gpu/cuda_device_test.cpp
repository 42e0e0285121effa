// Unit tests of the cuda device's GPU-independent parts (kern-load/cuda/):
// the cuLaunchKernel parameter layout of declared params, the ABI check and
// instance selection against fabricated cuFuncGetParamInfo results, the
// row-major -> column-major GEMM mapping (emulated on the CPU and compared
// with the cpu reference GEMM), extern op names, the no-driver errors, the
// non-blocking read of kernel files, and against fake driver tables and a
// fake cublasLt (fake_cuda_library.cpp): PDL on and off, the param-info
// loop, shared memory attributes, an abandoned capture, cublasLt's
// alignment preferences, plan cache and lifetime.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "common/bf16.h"
#include "common/sha256.h"
#include "kern-load/cuda/cuda_abi.h"
#include "kern-load/cuda/cuda_device.h"
#include "kern-load/cuda/cuda_driver.h"
#include "kern-load/cuda/cuda_function.h"
#include "kern-load/cuda/cublaslt.h"
#include "kern-load/cuda/cuda_launch.h"
#include "kern-load/cuda/gemm_mapping.h"
#include "kernels-src/cpu/cpu_kernel.h"

using namespace kern;
using namespace kern::load::cuda;

namespace {

std::vector<ParamType> params(std::initializer_list<const char*> names) {
  std::vector<ParamType> out;
  for (const char* n : names) out.push_back(*parse_param_type(n));
  return out;
}

// kern_reshape_and_cache_bf16 (docs/kernels.md §7).
const std::vector<ParamType> kCacheWrite =
    params({"in buffer<bf16>", "in buffer<bf16>", "inout ptr", "in buffer<i64>", "in buffer<f32>", "in buffer<f32>",
            "i32", "i32", "i32", "i32", "i32", "i64"});
// What cuFuncGetParamInfo reports for it: 6 pointers, 5 ints, the i64 aligned up to 72.
const std::vector<ParamSlot> kCacheWriteSlots = {{0, 8},  {8, 8},  {16, 8}, {24, 8}, {32, 8}, {40, 8},
                                                 {48, 4}, {52, 4}, {56, 4}, {60, 4}, {64, 4}, {72, 8}};

}  // namespace

TEST_CASE("the declared param layout aligns each value to its own size", "[cuda][abi]") {
  const auto layout = declared_param_layout(params({"i32", "i64", "u8", "i32", "out ptr", "u8", "f32"}));
  const std::vector<ParamSlot> want = {{0, 4}, {8, 8}, {16, 1}, {20, 4}, {24, 8}, {32, 1}, {36, 4}};
  CHECK(layout == want);
  CHECK(declared_param_layout(kCacheWrite) == kCacheWriteSlots);
}

TEST_CASE("the abi check accepts a kernel whose param info matches the step", "[cuda][abi]") {
  CHECK(check_param_layout("steps[5] kern_reshape_and_cache_bf16", kCacheWrite, kCacheWriteSlots).ok());
}

TEST_CASE("the abi check rejects a param of the wrong size naming it", "[cuda][abi]") {
  auto narrowed = kCacheWrite;
  narrowed[11] = *parse_param_type("i32");  // page_stride declared i32: 4 B at 68
  const Status st = check_param_layout("steps[5] kern_reshape_and_cache_bf16", narrowed, kCacheWriteSlots);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().kind == ErrorKind::kKernel);
  CHECK(st.error().message ==
        "steps[5] kern_reshape_and_cache_bf16: param 11 (i32): kernel has 8 B at offset 72, declared 4 B at offset 68");
}

TEST_CASE("the abi check rejects a param count mismatch", "[cuda][abi]") {
  auto slots = kCacheWriteSlots;
  slots.pop_back();
  const Status st = check_param_layout("k", kCacheWrite, slots);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message == "k: the kernel has 11 params, the step declares 12");
}

TEST_CASE("instance selection picks the one specialisation whose layout matches", "[cuda][abi]") {
  // Two Triton-style instances of one name: (ptr, i32, i32) and (ptr, i64).
  const std::vector<Instance> instances = {{"a.cubin", {{0, 8}, {8, 4}, {12, 4}}}, {"b.cubin", {{0, 8}, {8, 8}}}};
  auto chosen = select_instance("k", params({"in ptr", "i64"}), instances);
  REQUIRE(chosen.ok());
  CHECK(chosen.value() == 1);
  auto other = select_instance("k", params({"in ptr", "i32", "u32"}), instances);
  REQUIRE(other.ok());
  CHECK(other.value() == 0);
}

TEST_CASE("instance selection reports no match, no instance and ambiguity", "[cuda][abi]") {
  const std::vector<Instance> two_same = {{"a.cubin", {{0, 8}}}, {"b.cubin", {{0, 8}}}};
  auto none = select_instance("k", params({"i32"}), two_same);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.find("k: no instance matches the declared params") == 0);
  CHECK(none.error().message.find("k in b.cubin: param 0 (i32): kernel has 8 B at offset 0") != std::string::npos);
  auto ambiguous = select_instance("k", params({"i64"}), two_same);
  REQUIRE_FALSE(ambiguous.ok());
  CHECK(ambiguous.error().message ==
        "k: ambiguous: 2 instances match the declared params (a.cubin, b.cubin); pin the step to one file with `cubin`");
  auto missing = select_instance("k", params({"i64"}), {});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == "k: symbol not found in any kernel file");
}

namespace {

/// BLAS semantics of one column-major call D = op(A) op(B) + beta C (f32
/// accumulation in k order, one bf16 rounding), A/B/C bf16.
void emulate_column_major(const ColumnMajorGemm& g, const uint16_t* A, const uint16_t* B, uint16_t* C, float beta) {
  for (uint64_t j = 0; j < g.n; ++j)
    for (uint64_t i = 0; i < g.m; ++i) {
      float acc = 0.0f;
      for (uint64_t p = 0; p < g.k; ++p) {
        const uint16_t a = g.transa ? A[p + i * g.lda] : A[i + p * g.lda];
        const uint16_t b = g.transb ? B[j + p * g.ldb] : B[p + j * g.ldb];
        acc += bf16_to_f32(a) * bf16_to_f32(b);
      }
      uint16_t& c = C[i + j * g.ldc];
      c = f32_to_bf16(acc + beta * bf16_to_f32(c));
    }
}

std::vector<uint16_t> random_bf16(size_t n, uint32_t seed) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = f32_to_bf16(static_cast<float>(seed >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
  return v;
}

/// Runs the cpu reference extern GEMM on row-major a, w, c.
void cpu_gemm(const char* symbol, std::vector<uint16_t>& a, std::vector<uint16_t>& w, std::vector<uint16_t>& c,
              int32_t m, int32_t n, int32_t k) {
  void* pa = a.data();
  void* pw = w.data();
  void* pc = c.data();
  void* args[6] = {&pa, &pw, &pc, &m, &n, &k};
  cpu::CpuLaunch l;
  l.args = args;
  l.num_args = 6;
  auto fn = cpu::find_cpu_kernel(symbol);
  REQUIRE(fn != nullptr);
  REQUIRE(fn->run(l).ok());
}

}  // namespace

TEST_CASE("the column-major gemm mapping reproduces the row-major reference gemm", "[cuda][gemm]") {
  struct Shape { int m, n, k; };
  for (Shape s : {Shape{1, 24, 40}, Shape{5, 7, 3}, Shape{16, 33, 64}}) {
    for (bool acc : {false, true}) {
      CAPTURE(s.m, s.n, s.k, acc);
      auto a = random_bf16(size_t(s.m) * s.k, 1), w = random_bf16(size_t(s.n) * s.k, 2);
      auto c0 = random_bf16(size_t(s.m) * s.n, 3);
      std::vector<uint16_t> ref = c0, got = c0;
      cpu_gemm(acc ? "extern:cublaslt_bf16_tn_acc" : "extern:cublaslt_bf16_tn", a, w, ref, s.m, s.n, s.k);
      const ColumnMajorGemm g = map_row_major_tn(s.m, s.n, s.k);
      CHECK(g.a_rows * g.a_cols == w.size());  // the stored operands have exactly the buffers' extents
      CHECK(g.b_rows * g.b_cols == a.size());
      CHECK(g.ldc * g.n == got.size());
      emulate_column_major(g, g.a_operand == GemmOperand::kW ? w.data() : a.data(),
                           g.b_operand == GemmOperand::kA ? a.data() : w.data(), got.data(), acc ? 1.0f : 0.0f);
      for (size_t i = 0; i < ref.size(); ++i) {
        // Summation order differs (the reference uses 8 lanes): allow one bf16 ulp.
        const float r = bf16_to_f32(ref[i]), x = bf16_to_f32(got[i]);
        INFO("c[" << i / s.n << ", " << i % s.n << "]: mapped " << x << ", reference " << r);
        REQUIRE(std::fabs(r - x) <= std::ldexp(std::fabs(r), -7) + 1e-6f);
      }
    }
  }
}

TEST_CASE("a transposed mapping would not reproduce the reference", "[cuda][gemm]") {
  // The check above has teeth: swapping transa gives a different product.
  const int m = 3, n = 4, k = 4;
  auto a = random_bf16(size_t(m) * k, 7), w = random_bf16(size_t(n) * k, 8);
  std::vector<uint16_t> ref(size_t(m) * n), got(size_t(m) * n);
  cpu_gemm("extern:cublaslt_bf16_tn", a, w, ref, m, n, k);
  ColumnMajorGemm g = map_row_major_tn(m, n, k);
  g.transa = !g.transa;
  emulate_column_major(g, w.data(), a.data(), got.data(), 0.0f);
  CHECK(ref != got);
}

TEST_CASE("loading a driver library that does not exist is a device error naming it", "[cuda]") {
  auto d = Driver::load("libkern-no-such-driver.so.1");
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().kind == ErrorKind::kDevice);
  CHECK(d.error().message.find("no CUDA driver: dlopen libkern-no-such-driver.so.1 failed: ") == 0);
  CHECK(d.error().message.find("; no libkern-no-such-driver.so.1 in /usr/local/cuda/lib64, ") != std::string::npos);
}

TEST_CASE("the cuda device without a driver says so clearly", "[cuda]") {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) {  // a machine with a driver: this behaviour cannot be observed here
    dlclose(h);
    SUCCEED("libcuda.so.1 present");
    return;
  }
  auto d = load::make_cuda_device(load::CudaDeviceOptions{});
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().kind == ErrorKind::kDevice);
  CHECK(d.error().message.find("no CUDA driver: dlopen libcuda.so.1") == 0);
}

TEST_CASE("a pinned kernel file whose sha256 differs is rejected naming both digests", "[cuda][sha256]") {
  const std::string text = "abc";
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  // sha256("abc"), FIPS 180-2 appendix B.1.
  const auto good = *parse_sha256_hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto bad = good;
  bad[0] ^= 1;
  const uint8_t* none[] = {nullptr};
  CHECK(check_kernel_file_sha256("k/a.fatbin", bytes, std::span<const uint8_t* const>(none, 0)).ok());
  const uint8_t* ok_pin[] = {good.data(), good.data()};
  CHECK(check_kernel_file_sha256("k/a.fatbin", bytes, ok_pin).ok());
  const uint8_t* pins[] = {good.data(), bad.data()};
  const Status st = check_kernel_file_sha256("k/a.fatbin", bytes, pins);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().kind == ErrorKind::kKernel);
  CHECK(st.error().message ==
        "k/a.fatbin: sha256 mismatch: expected bb7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad, "
        "actual ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("kernel files are read without blocking: a FIFO is refused at once, a missing file named",
          "[cuda][kernel-file]") {
  char dir_template[] = "/tmp/kern-kernel-file-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  // A FIFO with no writer: a plain open(2) for reading would wait forever.
  const std::string fifo = dir + "/k.fatbin";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  auto r = read_kernel_file(fifo);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kKernel);
  CHECK(r.error().message.find(fifo + ": is a FIFO, not a regular file") == 0);
  CHECK(r.error().message.find("--kernels DIR") != std::string::npos);
  auto missing = read_kernel_file(dir + "/none.fatbin");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find(dir + "/none.fatbin: cannot open") == 0);
  const std::string real = dir + "/a.cubin";
  {
    FILE* f = std::fopen(real.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fputs("\x7f" "ELF-bytes", f);
    std::fclose(f);
  }
  auto ok = read_kernel_file(real);
  REQUIRE(ok.ok());
  CHECK(*ok == "\x7f" "ELF-bytes");
  std::remove(real.c_str());
  std::remove(fifo.c_str());
  rmdir(dir.c_str());
}

namespace {

// A fake driver table for launch_kernel: records which entry point each
// launch used and what it was given.
struct RecordedLaunch {
  bool ex = false;
  unsigned grid[3] = {}, block[3] = {}, smem = 0;
  CUstream stream = nullptr;
  void** params = nullptr;
  std::vector<CUlaunchAttribute> attrs;
};
std::vector<RecordedLaunch> g_launches;

CUresult CUDAAPI fake_launch(CUfunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned smem, CUstream stream, void** params, void**) {
  RecordedLaunch r;
  r.grid[0] = gx, r.grid[1] = gy, r.grid[2] = gz;
  r.block[0] = bx, r.block[1] = by, r.block[2] = bz;
  r.smem = smem;
  r.stream = stream;
  r.params = params;
  g_launches.push_back(r);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_launch_ex(const CUlaunchConfig* c, CUfunction, void** params, void**) {
  RecordedLaunch r;
  r.ex = true;
  r.grid[0] = c->gridDimX, r.grid[1] = c->gridDimY, r.grid[2] = c->gridDimZ;
  r.block[0] = c->blockDimX, r.block[1] = c->blockDimY, r.block[2] = c->blockDimZ;
  r.smem = c->sharedMemBytes;
  r.stream = c->hStream;
  r.params = params;
  r.attrs.assign(c->attrs, c->attrs + c->numAttrs);
  g_launches.push_back(r);
  return CUDA_SUCCESS;
}

}  // namespace

TEST_CASE("pdl steps launch with the programmatic stream serialization attribute, others plainly",
          "[cuda][pdl]") {
  DriverApi api;
  api.cuLaunchKernel = fake_launch;
  api.cuLaunchKernelEx = fake_launch_ex;
  const bool step_pdl[] = {true, false, true, false};
  auto* stream = reinterpret_cast<CUstream>(uintptr_t{0x1234});
  void* params[1] = {nullptr};
  for (const int cc_major : {9, 10, 8, 7}) {
    g_launches.clear();
    for (size_t i = 0; i < 4; ++i) {
      kern::load::LaunchDims dims;
      dims.grid[0] = static_cast<uint32_t>(10 + i);
      dims.grid[1] = 2;
      dims.block[0] = 128;
      dims.shared_mem_bytes = 4096;
      REQUIRE(launch_kernel(api, nullptr, dims, stream, params, use_pdl(step_pdl[i], cc_major)) == CUDA_SUCCESS);
    }
    REQUIRE(g_launches.size() == 4);
    for (size_t i = 0; i < 4; ++i) {
      const RecordedLaunch& r = g_launches[i];
      INFO("cc " << cc_major << ".0, step " << i);
      const bool want_pdl = step_pdl[i] && cc_major >= 9;
      CHECK(r.ex == want_pdl);
      CHECK(r.grid[0] == 10 + i);
      CHECK(r.grid[1] == 2);
      CHECK(r.grid[2] == 1);
      CHECK(r.block[0] == 128);
      CHECK(r.smem == 4096);
      CHECK(r.stream == stream);
      CHECK(r.params == params);
      if (want_pdl) {
        REQUIRE(r.attrs.size() == 1);
        CHECK(r.attrs[0].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
        CHECK(r.attrs[0].value.programmaticStreamSerializationAllowed == 1);
      } else {
        CHECK(r.attrs.empty());
      }
    }
  }
}

TEST_CASE("pdl off (CudaDeviceOptions::pdl, kern-run --no-pdl) launches every step plainly", "[cuda][pdl]") {
  DriverApi api;
  api.cuLaunchKernel = fake_launch;
  api.cuLaunchKernelEx = fake_launch_ex;
  void* params[1] = {nullptr};
  g_launches.clear();
  for (const bool step_pdl : {true, false}) {
    kern::load::LaunchDims dims;
    REQUIRE(launch_kernel(api, nullptr, dims, nullptr, params, use_pdl(step_pdl, 9, false)) == CUDA_SUCCESS);
  }
  REQUIRE(g_launches.size() == 2);
  CHECK_FALSE(g_launches[0].ex);
  CHECK_FALSE(g_launches[1].ex);
  CHECK(use_pdl(true, 9, true));
  CHECK(load::CudaDeviceOptions{}.pdl);  // on unless asked
}

namespace {

// A fake driver for the CUfunction queries (cuda_function.h). Functions are
// plain numbers: 0x10 has the three params of kFakeSlots, 0x20 none, 0x30
// fails its second param query with a real error, 0x40 answers every index;
// any other handle is invalid (CUDA_ERROR_INVALID_HANDLE for attributes,
// CUDA_ERROR_INVALID_VALUE for cuFuncGetParamInfo, as the driver does).
const std::vector<ParamSlot> kFakeSlots = {{0, 8}, {8, 4}, {16, 8}};
CUfunction fake_fn(uintptr_t id) { return reinterpret_cast<CUfunction>(id); }
bool fake_valid(CUfunction f) {
  const auto id = reinterpret_cast<uintptr_t>(f);
  return id == 0x10 || id == 0x20 || id == 0x30 || id == 0x40;
}

CUresult CUDAAPI fake_error_name(CUresult r, const char** name) {
  switch (r) {
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI fake_func_attribute(int* v, CUfunction_attribute attr, CUfunction f) {
  if (!fake_valid(f)) return CUDA_ERROR_INVALID_HANDLE;
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 32; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = 40960; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = 49152 - 40960; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI fake_param_info(CUfunction f, size_t i, size_t* offset, size_t* size) {
  const auto id = reinterpret_cast<uintptr_t>(f);
  if (!fake_valid(f)) return CUDA_ERROR_INVALID_VALUE;  // what the driver answers for a bad handle too
  if (id == 0x30 && i == 1) return CUDA_ERROR_NOT_INITIALIZED;
  if (id == 0x40) {
    *offset = i * 8, *size = 8;
    return CUDA_SUCCESS;
  }
  const size_t n = id == 0x10 || id == 0x30 ? kFakeSlots.size() : 0;
  if (i >= n) return CUDA_ERROR_INVALID_VALUE;
  *offset = kFakeSlots[i].offset, *size = kFakeSlots[i].size;
  return CUDA_SUCCESS;
}

DriverApi function_api() {
  DriverApi api;
  api.cuGetErrorName = fake_error_name;
  api.cuFuncGetAttribute = fake_func_attribute;
  api.cuFuncGetParamInfo = fake_param_info;
  return api;
}

}  // namespace

TEST_CASE("the param-info loop tells the end of the params from a real error", "[cuda][abi]") {
  const DriverApi api = function_api();
  auto three = read_param_layout(api, fake_fn(0x10));
  REQUIRE(three.ok());
  CHECK(*three == kFakeSlots);
  auto none = read_param_layout(api, fake_fn(0x20));
  REQUIRE(none.ok());
  CHECK(none->empty());  // a kernel without params: CUDA_ERROR_INVALID_VALUE at index 0 on a valid handle
  // A bad handle answers CUDA_ERROR_INVALID_VALUE at index 0 too: an error, not "0 params".
  auto bad = read_param_layout(api, fake_fn(0xbad));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::kDevice);
  CHECK(bad.error().message == "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS): CUDA_ERROR_INVALID_HANDLE");
  auto failing = read_param_layout(api, fake_fn(0x30));
  REQUIRE_FALSE(failing.ok());
  CHECK(failing.error().message == "cuFuncGetParamInfo(param 1): CUDA_ERROR_NOT_INITIALIZED");
  auto endless = read_param_layout(api, fake_fn(0x40));
  REQUIRE_FALSE(endless.ok());
  CHECK(endless.error().message == "cuFuncGetParamInfo: the driver reports more than 32764 params");
}

TEST_CASE("a function's static and dynamic shared memory are read from its attributes", "[cuda][smem]") {
  const DriverApi api = function_api();
  auto smem = read_shared_memory(api, fake_fn(0x10));
  REQUIRE(smem.ok());
  CHECK(smem->static_bytes == 40960);
  CHECK(smem->max_dynamic_bytes == 8192);
  auto bad = read_shared_memory(api, fake_fn(0xbad));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES): CUDA_ERROR_INVALID_HANDLE");
}

namespace {

CUresult g_end_capture_result = CUDA_SUCCESS;
CUgraph g_partial_graph = nullptr;
int g_graphs_destroyed = 0;

CUresult CUDAAPI fake_end_capture(CUstream, CUgraph* graph) {
  *graph = g_partial_graph;
  return g_end_capture_result;
}
CUresult CUDAAPI fake_graph_destroy(CUgraph) {
  ++g_graphs_destroyed;
  return CUDA_SUCCESS;
}

}  // namespace

TEST_CASE("ending a capture a failed launch invalidated adds no noise to the launch's error", "[cuda][graph]") {
  DriverApi api;
  api.cuGetErrorName = fake_error_name;
  api.cuStreamEndCapture = fake_end_capture;
  api.cuGraphDestroy = fake_graph_destroy;
  const Status launch = make_error(ErrorKind::kDevice, "steps[3] kern_x: cuLaunchKernel: CUDA_ERROR_INVALID_VALUE");
  g_graphs_destroyed = 0;
  g_partial_graph = nullptr;
  g_end_capture_result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  const Status joined = join(launch, end_abandoned_capture(api, nullptr));
  REQUIRE_FALSE(joined.ok());
  CHECK(joined.error().message == launch.error().message);  // the launch's error alone
  // A partial graph handed back is destroyed; a plain end is fine too.
  g_partial_graph = reinterpret_cast<CUgraph>(uintptr_t{0x99});
  CHECK(end_abandoned_capture(api, nullptr).ok());
  CHECK(g_graphs_destroyed == 1);
  g_partial_graph = nullptr;
  g_end_capture_result = CUDA_SUCCESS;
  CHECK(end_abandoned_capture(api, nullptr).ok());
  // Any other failure of cuStreamEndCapture is real and reported.
  g_end_capture_result = CUDA_ERROR_ILLEGAL_ADDRESS;
  const Status other = end_abandoned_capture(api, nullptr);
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message == "cuStreamEndCapture: CUDA_ERROR_ILLEGAL_ADDRESS");
}

TEST_CASE("a gemm operand's alignment is the largest power of two dividing its address, at most 256",
          "[cuda][gemm]") {
  CHECK(gemm_pointer_alignment(0x7f0000000000) == 256);
  CHECK(gemm_pointer_alignment(0x7f0000000100) == 256);
  CHECK(gemm_pointer_alignment(0x7f0000000080) == 128);
  CHECK(gemm_pointer_alignment(0x7f0000000010) == 16);
  CHECK(gemm_pointer_alignment(0x7f0000000002) == 2);
  CHECK(gemm_pointer_alignment(0) == 256);
}

namespace {

/// The fake cublasLt's record (test/gpu/fake_cuda_library.cpp).
struct FakeCublasLtState {
  int handles = 0;
  int heuristic_calls = 0;
  int matmul_calls = 0;
  uint64_t last_pref[16] = {};
};

/// A private copy of the fake library under a cublasLt name, in a fresh
/// directory: its own instance, not loaded by anything else.
std::string fake_cublaslt_copy(std::string& dir) {
  const char* src = std::getenv("KERN_FAKE_CUDA_LIBRARY");
  REQUIRE(src != nullptr);
  char tmpl[] = "/tmp/kern-fake-cublaslt-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  dir = tmpl;
  const std::string dst = dir + "/libcublasLt.so.13";
  FILE* in = std::fopen(src, "rb");
  FILE* out = std::fopen(dst.c_str(), "wb");
  REQUIRE(in != nullptr);
  REQUIRE(out != nullptr);
  char buf[1 << 14];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;) REQUIRE(std::fwrite(buf, 1, n, out) == n);
  std::fclose(in);
  std::fclose(out);
  return dst;
}

}  // namespace

TEST_CASE("cublasLt is told each operand's actual alignment, plans are cached per alignment, and the library "
          "is never unloaded", "[cuda][gemm][cublaslt]") {
  std::string dir;
  const std::string path = fake_cublaslt_copy(dir);
  REQUIRE(dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD) == nullptr);  // not loaded yet
  auto lt = CublasLt::load(0x100000, 1 << 20, path);
  REQUIRE(lt.ok());
  CHECK((*lt)->path() == path);
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h != nullptr);
  auto* state = reinterpret_cast<FakeCublasLtState* (*)()>(dlsym(h, "kern_fake_cublaslt_state"))();
  dlclose(h);  // only CublasLt's own reference keeps it loaded now
  CHECK(state->handles == 1);
  const CUdeviceptr a = 0x7f0000000000, w = 0x7f0000100000, c = 0x7f0000200000;
  REQUIRE((*lt)->gemm_bf16_tn(nullptr, a, w, c, 1, 64, 32, false).ok());
  CHECK(state->heuristic_calls == 1);
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES] == (1u << 20));
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] == 256);  // cublasLt "A" = w
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES] == 256);  // "B" = a
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES] == 256);
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES] == 256);
  REQUIRE((*lt)->gemm_bf16_tn(nullptr, a + 512, w, c + 256, 1, 64, 32, false).ok());
  CHECK(state->heuristic_calls == 1);  // same shape, same alignments: the cached plan
  // A slice of c 2 bytes in: a new plan for that alignment, C and D told so.
  REQUIRE((*lt)->gemm_bf16_tn(nullptr, a, w, c + 2, 1, 64, 32, false).ok());
  CHECK(state->heuristic_calls == 2);
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES] == 2);
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES] == 2);
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] == 256);
  REQUIRE((*lt)->gemm_bf16_tn(nullptr, a + 16, w + 64, c, 1, 64, 32, false).ok());
  CHECK(state->heuristic_calls == 3);
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES] == 16);
  CHECK(state->last_pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] == 64);
  REQUIRE((*lt)->gemm_bf16_tn(nullptr, a, w, c + 2, 1, 64, 32, false).ok());
  CHECK(state->heuristic_calls == 3);  // cached
  CHECK(state->matmul_calls == 5);
  REQUIRE((*lt)->close().ok());
  CHECK(state->handles == 0);
  lt->reset();
  // Destroyed, yet still loaded: never dlclosed (its cudart outlives the last call).
  CHECK(dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD) != nullptr);
  std::remove(path.c_str());
  rmdir(dir.c_str());
}
