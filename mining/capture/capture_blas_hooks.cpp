// cublasLt's recorded entry points (capture_blas_hooks.h): layouts and
// matmul descriptors are remembered by handle, each cublasLtMatmul becomes
// a `library_call` record, and the kernels cublasLt launches inside it are
// marked as its own (LaunchView::in_library).
#include "mining/capture/capture_blas_hooks.h"

#include <cublasLt.h>

#include <atomic>
#include <cstring>

#include "mining/capture/capture_recorder.h"

namespace kern::capture {
namespace {

std::atomic<void*> g_layout_create{nullptr}, g_desc_create{nullptr}, g_desc_set{nullptr}, g_matmul{nullptr};
thread_local const char* t_library_call = nullptr;

cublasStatus_t w_layout_create(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows, uint64_t cols,
                               int64_t ld) {
  auto fn = reinterpret_cast<decltype(&cublasLtMatrixLayoutCreate)>(g_layout_create.load());
  const cublasStatus_t r = fn(layout, type, rows, cols, ld);
  if (r == CUBLAS_STATUS_SUCCESS && layout != nullptr) Recorder::get().on_blas_layout(*layout, type, rows, cols, ld);
  return r;
}

cublasStatus_t w_desc_create(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  auto fn = reinterpret_cast<decltype(&cublasLtMatmulDescCreate)>(g_desc_create.load());
  const cublasStatus_t r = fn(desc, compute, scale);
  if (r == CUBLAS_STATUS_SUCCESS && desc != nullptr) Recorder::get().on_blas_desc(*desc, compute, scale);
  return r;
}

cublasStatus_t w_desc_set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf,
                          size_t size) {
  auto fn = reinterpret_cast<decltype(&cublasLtMatmulDescSetAttribute)>(g_desc_set.load());
  const cublasStatus_t r = fn(desc, attr, buf, size);
  if (r == CUBLAS_STATUS_SUCCESS) Recorder::get().on_blas_desc_attribute(desc, attr, buf, size);
  return r;
}

cublasStatus_t w_matmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                        cublasLtMatrixLayout_t adesc, const void* b, cublasLtMatrixLayout_t bdesc, const void* beta,
                        const void* c, cublasLtMatrixLayout_t cdesc, void* d, cublasLtMatrixLayout_t ddesc,
                        const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                        cudaStream_t stream) {
  auto fn = reinterpret_cast<decltype(&cublasLtMatmul)>(g_matmul.load());
  BlasMatmulView m;
  m.desc = desc, m.alpha = alpha, m.beta = beta, m.stream = reinterpret_cast<CUstream>(stream);
  const void* operands[4] = {a, b, c, d};
  const void* layouts[4] = {adesc, bdesc, cdesc, ddesc};
  for (int i = 0; i < 4; ++i) m.operand[i] = reinterpret_cast<uint64_t>(operands[i]), m.layout[i] = layouts[i];
  Recorder::get().before_blas_matmul(m);
  const char* outer = t_library_call;
  t_library_call = "cublasLtMatmul";
  const cublasStatus_t r =
      fn(handle, desc, alpha, a, adesc, b, bdesc, beta, c, cdesc, d, ddesc, algo, workspace, workspace_bytes, stream);
  t_library_call = outer;
  if (outer == nullptr) Recorder::get().on_blas_matmul(m, r);
  return r;
}

/// Keeps `fn` in `slot` (the first address seen wins) and returns `wrapper`;
/// `fn` itself when the slot holds another address.
void* keep(std::atomic<void*>& slot, void* fn, void* wrapper) {
  void* expected = nullptr;
  if (slot.compare_exchange_strong(expected, fn) || expected == fn) return wrapper;
  return fn;
}

}  // namespace

void* wrap_blas(const char* name, void* fn) {
  if (fn == nullptr) return fn;
  if (std::strcmp(name, "cublasLtMatrixLayoutCreate") == 0)
    return keep(g_layout_create, fn, reinterpret_cast<void*>(&w_layout_create));
  if (std::strcmp(name, "cublasLtMatmulDescCreate") == 0)
    return keep(g_desc_create, fn, reinterpret_cast<void*>(&w_desc_create));
  if (std::strcmp(name, "cublasLtMatmulDescSetAttribute") == 0)
    return keep(g_desc_set, fn, reinterpret_cast<void*>(&w_desc_set));
  if (std::strcmp(name, "cublasLtMatmul") == 0) return keep(g_matmul, fn, reinterpret_cast<void*>(&w_matmul));
  return fn;
}

const char* current_library_call() { return t_library_call; }

}  // namespace kern::capture
