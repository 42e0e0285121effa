// The simulated cublasLt: kern-load's own CublasLt (kern-load/cuda/cublaslt.h)
// computes the row-major extern GEMMs through it bit for bit as an
// independent row-major reference (f32 sums in k order, one bf16 rounding),
// and the library refuses what the real one refuses: a leading dimension
// below the row count, mismatched shapes, unsimulated types, a pointer less
// aligned than the preference promised, a workspace smaller than the
// algorithm needs. Tensor parallelism's f32 k slices and
// cublasLtMatrixTransform adds, bit for bit, and the transform's refusals.
#include <catch2/catch.hpp>
#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "common/bf16.h"
#include "kern-load/cuda/cublaslt.h"
#include "kern-load/cuda/cuda_driver.h"

namespace {

using kern::load::cuda::CublasLt;
using kern::load::cuda::Driver;

struct Env {
  std::unique_ptr<Driver> driver;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr workspace = 0;
  std::unique_ptr<CublasLt> lt;
  Env() {
    auto d = Driver::load(std::getenv("KERN_SIM_DRIVER"));
    REQUIRE(d.ok());
    driver = std::move(d).value();
    const auto& a = driver->api();
    REQUIRE(a.cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
    REQUIRE(a.cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    REQUIRE(a.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    REQUIRE(a.cuMemAlloc(&workspace, 32 << 20) == CUDA_SUCCESS);
    auto l = CublasLt::load(workspace, 32 << 20);
    REQUIRE(l.ok());
    lt = std::move(l).value();
    // The simulated library, not a real one found elsewhere.
    REQUIRE(lt->path().find("libcublasLt.so.13") != std::string::npos);
  }
  CUdeviceptr upload(const std::vector<uint16_t>& v) {
    CUdeviceptr p = 0;
    REQUIRE(driver->api().cuMemAlloc(&p, v.size() * 2) == CUDA_SUCCESS);
    REQUIRE(driver->api().cuMemcpyHtoDAsync(p, v.data(), v.size() * 2, stream) == CUDA_SUCCESS);
    return p;
  }
  std::vector<uint16_t> download(CUdeviceptr p, size_t n) {
    std::vector<uint16_t> v(n);
    REQUIRE(driver->api().cuMemcpyDtoHAsync(v.data(), p, n * 2, stream) == CUDA_SUCCESS);  // pageable: synchronous
    return v;
  }
};

Env& env() {
  static Env* e = new Env();
  return *e;
}

std::vector<uint16_t> random_bf16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = kern::f32_to_bf16(u(rng));
  return v;
}

template <typename F>
F sym(const char* name) {
  void* lib = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(lib != nullptr);
  auto f = reinterpret_cast<F>(dlsym(lib, name));
  REQUIRE(f != nullptr);
  return f;
}

}  // namespace

TEST_CASE("sim cublasLt: kern-load's row-major extern GEMMs equal a row-major reference bit for bit") {
  Env& e = env();
  for (auto [m, n, k] : {std::tuple{1, 8, 16}, std::tuple{5, 24, 40}, std::tuple{7, 3, 130}}) {
    const auto a = random_bf16(size_t(m) * k, 1), w = random_bf16(size_t(n) * k, 2), c0 = random_bf16(size_t(m) * n, 3);
    CUdeviceptr da = e.upload(a), dw = e.upload(w), dc = e.upload(c0);
    for (bool acc : {false, true}) {
      if (acc) REQUIRE(e.driver->api().cuMemcpyHtoDAsync(dc, c0.data(), c0.size() * 2, e.stream) == CUDA_SUCCESS);
      REQUIRE(e.lt->gemm_bf16_tn(e.stream, da, dw, dc, m, n, k, acc).ok());
      const auto got = e.download(dc, size_t(m) * n);
      size_t wrong = 0;
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          float s = 0.0f;
          for (int l = 0; l < k; ++l) s += kern::bf16_to_f32(a[size_t(i) * k + l]) * kern::bf16_to_f32(w[size_t(j) * k + l]);
          if (acc) s = 1.0f * s + 1.0f * kern::bf16_to_f32(c0[size_t(i) * n + j]);
          wrong += got[size_t(i) * n + j] != kern::f32_to_bf16(s);
        }
      INFO("m=" << m << " n=" << n << " k=" << k << " acc=" << acc);
      CHECK(wrong == 0);
    }
    for (CUdeviceptr p : {da, dw, dc}) REQUIRE(e.driver->api().cuMemFree(p) == CUDA_SUCCESS);
  }
}

TEST_CASE("sim cublasLt: descriptors, layouts and preferences are checked as the real library checks them") {
  Env& e = env();
  auto create = sym<decltype(&cublasLtCreate)>("cublasLtCreate");
  auto desc_create = sym<decltype(&cublasLtMatmulDescCreate)>("cublasLtMatmulDescCreate");
  auto desc_set = sym<decltype(&cublasLtMatmulDescSetAttribute)>("cublasLtMatmulDescSetAttribute");
  auto layout = sym<decltype(&cublasLtMatrixLayoutCreate)>("cublasLtMatrixLayoutCreate");
  auto pref_create = sym<decltype(&cublasLtMatmulPreferenceCreate)>("cublasLtMatmulPreferenceCreate");
  auto pref_set = sym<decltype(&cublasLtMatmulPreferenceSetAttribute)>("cublasLtMatmulPreferenceSetAttribute");
  auto heuristic = sym<decltype(&cublasLtMatmulAlgoGetHeuristic)>("cublasLtMatmulAlgoGetHeuristic");
  auto matmul = sym<decltype(&cublasLtMatmul)>("cublasLtMatmul");
  cublasLtHandle_t h = nullptr;
  REQUIRE(create(&h) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t d = nullptr;
  REQUIRE(desc_create(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  const int32_t t = CUBLAS_OP_T;
  REQUIRE(desc_set(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) == CUBLAS_STATUS_SUCCESS);
  const int32_t conj = CUBLAS_OP_C;
  CHECK(desc_set(d, CUBLASLT_MATMUL_DESC_TRANSB, &conj, sizeof conj) == CUBLAS_STATUS_INVALID_VALUE);
  // C (16 x 8) = A^T (A stored 32 x 16) * B (32 x 8), column-major.
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr, bad_ld = nullptr, bad_k = nullptr, f16 = nullptr;
  REQUIRE(layout(&la, CUDA_R_16BF, 32, 16, 32) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(layout(&lb, CUDA_R_16BF, 32, 8, 32) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(layout(&lc, CUDA_R_16BF, 16, 8, 16) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(layout(&bad_ld, CUDA_R_16BF, 32, 8, 31) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(layout(&bad_k, CUDA_R_16BF, 30, 8, 32) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(layout(&f16, CUDA_R_16F, 32, 8, 32) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t pref = nullptr;
  REQUIRE(pref_create(&pref) == CUBLAS_STATUS_SUCCESS);
  const uint64_t ws = 32 << 20;
  REQUIRE(pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  CHECK(heuristic(h, d, la, bad_ld, lc, lc, pref, 1, &r, &found) == CUBLAS_STATUS_INVALID_VALUE);  // ld < rows
  CHECK(heuristic(h, d, la, bad_k, lc, lc, pref, 1, &r, &found) == CUBLAS_STATUS_INVALID_VALUE);   // k mismatch
  CHECK(heuristic(h, d, la, f16, lc, lc, pref, 1, &r, &found) == CUBLAS_STATUS_NOT_SUPPORTED);     // bf16 x f16
  CHECK(heuristic(h, d, lb, la, lc, lc, pref, 1, &r, &found) == CUBLAS_STATUS_INVALID_VALUE);      // swapped operands
  REQUIRE(heuristic(h, d, la, lb, lc, lc, pref, 1, &r, &found) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(found == 1);
  CHECK(r.workspaceSize <= ws);

  CUdeviceptr A = e.upload(random_bf16(32 * 16 + 8, 4)), B = e.upload(random_bf16(32 * 8, 5));
  CUdeviceptr C = e.upload(std::vector<uint16_t>(16 * 8, 0));
  const float one = 1.0f, zero = 0.0f;
  auto run = [&](CUdeviceptr a_ptr, const cublasLtMatmulAlgo_t* algo, size_t ws_bytes) {
    return matmul(h, d, &one, reinterpret_cast<void*>(a_ptr), la, reinterpret_cast<void*>(B), lb, &zero,
                  reinterpret_cast<void*>(C), lc, reinterpret_cast<void*>(C), lc, algo, reinterpret_cast<void*>(e.workspace),
                  ws_bytes, reinterpret_cast<cudaStream_t>(e.stream));
  };
  CHECK(run(A, &r.algo, ws) == CUBLAS_STATUS_SUCCESS);
  // 16 bytes in: bf16-aligned, but the default preference promised 256-byte alignment.
  CHECK(run(A + 16, &r.algo, ws) == CUBLAS_STATUS_NOT_SUPPORTED);
  if (r.workspaceSize > 0) CHECK(run(A, &r.algo, r.workspaceSize - 1) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(run(A, nullptr, ws) == CUBLAS_STATUS_NOT_SUPPORTED);
  // A preference that promises only 16 bytes gives an algorithm that accepts it.
  const uint32_t sixteen = 16;
  REQUIRE(pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &sixteen, sizeof sixteen) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(heuristic(h, d, la, lb, lc, lc, pref, 1, &r, &found) == CUBLAS_STATUS_SUCCESS);
  CHECK(run(A + 16, &r.algo, ws) == CUBLAS_STATUS_SUCCESS);
  CHECK(e.driver->api().cuStreamSynchronize(e.stream) == CUDA_SUCCESS);
}

// Tensor parallelism's pieces (kern-load/cuda/cuda_collective.cpp): a k slice
// of a GEMM with an f32 output and the rows' full stride, and the adds of
// the split-K tree (cublasLtMatrixTransform, alpha = beta = 1).
TEST_CASE("sim cublasLt: a k slice with f32 output and the full row stride, and f32 adds rounded once") {
  Env& e = env();
  const int m = 3, n = 5, k = 24, len = 8, s = 2;  // slice s of k / len
  const auto a = random_bf16(m * k, 21), w = random_bf16(n * k, 22);
  const CUdeviceptr da = e.upload(a), dw = e.upload(w);
  CUdeviceptr dc = 0, dsum = 0, dbf = 0;
  REQUIRE(e.driver->api().cuMemAlloc(&dc, m * n * 4 * 2) == CUDA_SUCCESS);
  REQUIRE(e.driver->api().cuMemAlloc(&dsum, m * n * 4) == CUDA_SUCCESS);
  REQUIRE(e.driver->api().cuMemAlloc(&dbf, m * n * 2) == CUDA_SUCCESS);
  REQUIRE(e.lt->gemm_bf16_tn_slice_f32(e.stream, da + s * len * 2, dw + s * len * 2, dc, m, n, len, k, 16).ok());
  REQUIRE(e.lt->gemm_bf16_tn_slice_f32(e.stream, da, dw, dc + m * n * 4, m, n, len, k, 16).ok());
  REQUIRE(e.lt->add_f32(e.stream, dc, dc + m * n * 4, dsum, m, n, false).ok());
  REQUIRE(e.lt->add_f32(e.stream, dc, dc + m * n * 4, dbf, m, n, true).ok());
  std::vector<float> slice(m * n * 2), sum(m * n);
  REQUIRE(e.driver->api().cuMemcpyDtoHAsync(slice.data(), dc, slice.size() * 4, e.stream) == CUDA_SUCCESS);
  REQUIRE(e.driver->api().cuMemcpyDtoHAsync(sum.data(), dsum, sum.size() * 4, e.stream) == CUDA_SUCCESS);
  const auto bf = e.download(dbf, m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float want_s = 0.0f, want_0 = 0.0f;  // in k order, as the simulated GEMM documents
      for (int x = 0; x < len; ++x) {
        want_s += kern::bf16_to_f32(a[i * k + s * len + x]) * kern::bf16_to_f32(w[j * k + s * len + x]);
        want_0 += kern::bf16_to_f32(a[i * k + x]) * kern::bf16_to_f32(w[j * k + x]);
      }
      CHECK(slice[i * n + j] == want_s);
      CHECK(slice[m * n + i * n + j] == want_0);
      CHECK(sum[i * n + j] == want_s + want_0);
      CHECK(bf[i * n + j] == kern::f32_to_bf16(want_s + want_0));
    }
  // A slice wider than the row stride is refused before cublasLt sees it.
  CHECK_FALSE(e.lt->gemm_bf16_tn_slice_f32(e.stream, da, dw, dc, m, n, k + 8, k, 16).ok());
  // Transform checks as the library's: bf16 inputs are not simulated.
  auto create = sym<cublasStatus_t (*)(cublasLtMatrixTransformDesc_t*, cudaDataType)>("cublasLtMatrixTransformDescCreate");
  auto destroy = sym<cublasStatus_t (*)(cublasLtMatrixTransformDesc_t)>("cublasLtMatrixTransformDescDestroy");
  auto transform = sym<decltype(&cublasLtMatrixTransform)>("cublasLtMatrixTransform");
  auto layout = sym<decltype(&cublasLtMatrixLayoutCreate)>("cublasLtMatrixLayoutCreate");
  auto layout_destroy = sym<decltype(&cublasLtMatrixLayoutDestroy)>("cublasLtMatrixLayoutDestroy");
  auto handle_create = sym<decltype(&cublasLtCreate)>("cublasLtCreate");
  cublasLtHandle_t h = nullptr;
  REQUIRE(handle_create(&h) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixTransformDesc_t d = nullptr;
  REQUIRE(create(&d, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t l16 = nullptr, l32 = nullptr, lsmall = nullptr;
  REQUIRE(layout(&l16, CUDA_R_16BF, n, m, n) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(layout(&l32, CUDA_R_32F, n, m, n) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(layout(&lsmall, CUDA_R_32F, n - 1, m, n) == CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f;
  CHECK(transform(h, d, &one, reinterpret_cast<void*>(dbf), l16, &one, reinterpret_cast<void*>(dsum), l32,
                  reinterpret_cast<void*>(dsum), l32, reinterpret_cast<cudaStream_t>(e.stream)) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(transform(h, d, &one, reinterpret_cast<void*>(dsum), lsmall, &one, reinterpret_cast<void*>(dsum), l32,
                  reinterpret_cast<void*>(dsum), l32, reinterpret_cast<cudaStream_t>(e.stream)) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(transform(h, d, &one, reinterpret_cast<void*>(dsum), l32, &one, nullptr, nullptr,
                  reinterpret_cast<void*>(dsum), l32, reinterpret_cast<cudaStream_t>(e.stream)) ==
        CUBLAS_STATUS_INVALID_VALUE);  // beta != 0 without B
  for (auto* l : {l16, l32, lsmall}) layout_destroy(l);
  destroy(d);
  sym<decltype(&cublasLtDestroy)>("cublasLtDestroy")(h);
}
