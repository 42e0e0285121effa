// cublasLt loaded with dlopen (libcublasLt.so.13, .so.12, .so, found as
// library_search.h says: loader, CUDA_HOME, CUDA wheels) for the two
// extern GEMMs (SPEC §3: `extern:cublaslt_bf16_tn`, `extern:cublaslt_bf16_tn_acc`)
// and the split-K GEMMs and all-reduce sums of tensor parallelism
// (cuda_collective.cpp: f32 k-slice GEMMs, cublasLtMatrixTransform adds).
// bf16 inputs and output, f32 compute and scale; the row-major call is mapped
// onto column-major by gemm_mapping.h. One preallocated workspace (so the
// calls are stream-capturable); the heuristic's algorithm and the layout
// descriptors are cached per (m, n, k, accumulate, operand alignments) on
// first use: the heuristic is told each pointer's actual alignment
// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES), so an operand that is not
// 256-byte aligned gets an algorithm that can read it.
#pragma once

#include <cublasLt.h>
#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace kern::load::cuda {

/// A cublasLt handle and its cached GEMM plans. Not thread-safe.
class CublasLt {
 public:
  /// dlopens cublasLt and creates a handle; `workspace` (device memory of
  /// `workspace_bytes`, owned by the caller, must outlive this object).
  /// Errors (kDevice): library missing ("cublasLt (for the extern GEMMs) is not
  /// available: dlopen libcublasLt.so.13: ...", every path tried), symbol missing, create failure.
  /// `library`: empty to search (library_search.h); a path with a '/' loads that file only (tests).
  static Result<std::unique_ptr<CublasLt>> load(CUdeviceptr workspace, uint64_t workspace_bytes,
                                                const std::string& library = {});
  /// Calls close(), dropping its failures. The library is never dlclosed:
  /// cublasLt carries a statically linked cudart whose exit handlers and
  /// threads outlive the last call (as libcuda's do, cuda_driver.cpp), and
  /// unloading it under a loaded libcuda can crash at process exit.
  ~CublasLt();
  /// Destroys the cached plans and the handle, the failures joined
  /// (StatusJoin), each naming its cublasLt call. Idempotent; no GEMM may
  /// run afterwards.
  Status close();
  CublasLt(const CublasLt&) = delete;
  /// What was dlopened: the soname (found by the loader) or the full path.
  const std::string& path() const { return path_; }
  CublasLt& operator=(const CublasLt&) = delete;

  /// Row-major c[m, n] = bf16(a[m, k] w[n, k]^T (+ c when `accumulate`)) on
  /// `stream`. Device pointers, any alignment of 2 bytes or more. The first
  /// call per shape and operand alignments builds and caches its plan
  /// (cold); later calls only look it up in a short vector.
  /// Errors (kDevice) name the cublasLt call and its status string.
  Status gemm_bf16_tn(CUstream stream, CUdeviceptr a, CUdeviceptr w, CUdeviceptr c, int m, int n, int k,
                      bool accumulate);

  /// One k slice of a split-K GEMM (docs/parallel.md): row-major f32
  /// c[m, n] = a[m, 0..k) w[n, 0..k)^T where a row of a and of w is `ld`
  /// elements apart (the slice starts at the pointers). The same cublasLt
  /// path as gemm_bf16_tn with an f32 D. `align`: the alignment (bytes) the
  /// plan promises for a and w, the same for every slice of a GEMM so that
  /// every slice (at every TP) gets the same algorithm.
  /// Errors (kDevice): k <= 0 or ld < k; cublasLt's (named).
  Status gemm_bf16_tn_slice_f32(CUstream stream, CUdeviceptr a, CUdeviceptr w, CUdeviceptr c, int m, int n, int k,
                                int ld, uint32_t align);

  /// out[rows, cols] = x + y elementwise (row-major, dense, f32 in), one
  /// rounding to f32, or to bf16 when `out_bf16`; y = 0 (no pointer): out =
  /// x converted. cublasLtMatrixTransform (C = alpha op(A) + beta op(B)) with
  /// alpha = beta = 1, on `stream`; out may be x. The adds of the split-K
  /// and all-reduce trees. Errors (kDevice) name the cublasLt call.
  Status add_f32(CUstream stream, CUdeviceptr x, CUdeviceptr y, CUdeviceptr out, uint64_t rows, uint64_t cols,
                 bool out_bf16);

 private:
  struct Api;
  struct Plan;
  struct Dense;
  CublasLt() = default;
  /// The cached plan of (m, n, k, ld, output type, accumulate) for operands
  /// of these alignments (gemm_pointer_alignment: w is cublasLt's A, a its B,
  /// c its C and D).
  Result<const Plan*> plan_for(int m, int n, int k, int ld, bool out_f32, bool accumulate, uint32_t align_w,
                               uint32_t align_a, uint32_t align_c);
  /// cublasLtMatmul of a cached plan.
  Status run(const Plan& p, CUstream stream, CUdeviceptr a, CUdeviceptr w, CUdeviceptr c, bool accumulate);
  /// The cached layout of a dense row-major [rows, cols] matrix.
  Result<cublasLtMatrixLayout_t> dense_layout(uint64_t rows, uint64_t cols, bool f32);
  Status check(cublasStatus_t s, const char* call) const;

  void* handle_lib_ = nullptr;       ///< owned dlopen handle
  std::string path_;                 ///< what was dlopened (soname or full path)
  std::unique_ptr<Api> api_;
  cublasLtHandle_t handle_ = nullptr;
  CUdeviceptr workspace_ = 0;        ///< borrowed
  uint64_t workspace_bytes_ = 0;
  std::vector<std::unique_ptr<Plan>> plans_;
  std::vector<std::unique_ptr<Dense>> dense_;
  cublasLtMatrixTransformDesc_t transform_desc_ = nullptr;
};

}  // namespace kern::load::cuda
