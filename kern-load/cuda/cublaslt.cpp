// cublasLt via dlopen (cublaslt.h).
#include "kern-load/cuda/cublaslt.h"

#include <dlfcn.h>

#include <utility>

#include "kern-load/cuda/gemm_mapping.h"
#include "kern-load/cuda/library_search.h"

namespace kern::load::cuda {

struct CublasLt::Api {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtMatrixTransformDescCreate) transform_create = nullptr;
  decltype(&cublasLtMatrixTransformDescDestroy) transform_destroy = nullptr;
  decltype(&cublasLtMatrixTransform) transform = nullptr;
};

/// A row-major [rows, cols] matrix of one type, dense (column-major cols x
/// rows, ld cols), for cublasLtMatrixTransform.
struct CublasLt::Dense {
  uint64_t rows = 0, cols = 0;
  bool f32 = true;
  cublasLtMatrixLayout_t layout = nullptr;
};

/// Descriptors and the chosen algorithm of one (m, n, k, accumulate) for
/// operands of given alignments (bytes).
struct CublasLt::Plan {
  int m = 0, n = 0, k = 0;
  int ld = 0;            ///< row stride of a and w in elements (k for a whole GEMM, more for a k slice)
  bool out_f32 = false;  ///< c is f32 (the split-K slices), else bf16
  bool accumulate = false;
  uint32_t align_w = 0, align_a = 0, align_c = 0;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

Result<std::unique_ptr<CublasLt>> CublasLt::load(CUdeviceptr workspace, uint64_t workspace_bytes,
                                                 const std::string& library) {
  std::unique_ptr<CublasLt> lt(new CublasLt());
  if (library.find('/') != std::string::npos) {  // an explicit path: that file only
    lt->handle_lib_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lt->handle_lib_ == nullptr) {
      const char* why = dlerror();
      return make_error(ErrorKind::kDevice, "cublasLt (for the extern GEMMs) is not available: dlopen " + library +
                                                " failed: " + (why ? why : "unknown error"));
    }
    lt->path_ = library;
  } else {
    auto opened = search_cuda_library({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
                                      LibrarySearchEnv::from_process());
    if (!opened.ok())
      return make_error(ErrorKind::kDevice,
                        "cublasLt (for the extern GEMMs) is not available: " + opened.error().message +
                            " (install the CUDA toolkit or a CUDA Python wheel, or set CUDA_HOME)");
    lt->handle_lib_ = opened.value().handle;
    lt->path_ = opened.value().path;
  }
  lt->api_ = std::make_unique<Api>();
  Api& a = *lt->api_;
  auto sym = [&](auto& slot, const char* name) -> Status {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(lt->handle_lib_, name));
    if (!slot) return make_error(ErrorKind::kDevice, std::string("cublasLt: missing symbol ") + name);
    return Status::ok_status();
  };
  KERN_RETURN_IF_ERROR(sym(a.create, "cublasLtCreate"));
  KERN_RETURN_IF_ERROR(sym(a.destroy, "cublasLtDestroy"));
  KERN_RETURN_IF_ERROR(sym(a.status_string, "cublasLtGetStatusString"));
  KERN_RETURN_IF_ERROR(sym(a.desc_create, "cublasLtMatmulDescCreate"));
  KERN_RETURN_IF_ERROR(sym(a.desc_destroy, "cublasLtMatmulDescDestroy"));
  KERN_RETURN_IF_ERROR(sym(a.desc_set, "cublasLtMatmulDescSetAttribute"));
  KERN_RETURN_IF_ERROR(sym(a.layout_create, "cublasLtMatrixLayoutCreate"));
  KERN_RETURN_IF_ERROR(sym(a.layout_destroy, "cublasLtMatrixLayoutDestroy"));
  KERN_RETURN_IF_ERROR(sym(a.pref_create, "cublasLtMatmulPreferenceCreate"));
  KERN_RETURN_IF_ERROR(sym(a.pref_destroy, "cublasLtMatmulPreferenceDestroy"));
  KERN_RETURN_IF_ERROR(sym(a.pref_set, "cublasLtMatmulPreferenceSetAttribute"));
  KERN_RETURN_IF_ERROR(sym(a.heuristic, "cublasLtMatmulAlgoGetHeuristic"));
  KERN_RETURN_IF_ERROR(sym(a.matmul, "cublasLtMatmul"));
  KERN_RETURN_IF_ERROR(sym(a.transform_create, "cublasLtMatrixTransformDescCreate"));
  KERN_RETURN_IF_ERROR(sym(a.transform_destroy, "cublasLtMatrixTransformDescDestroy"));
  KERN_RETURN_IF_ERROR(sym(a.transform, "cublasLtMatrixTransform"));
  KERN_RETURN_IF_ERROR(lt->check(a.create(&lt->handle_), "cublasLtCreate"));
  lt->workspace_ = workspace;
  lt->workspace_bytes_ = workspace_bytes;
  return lt;
}

// handle_lib_ is deliberately never dlclosed (cublaslt.h, ~CublasLt).
CublasLt::~CublasLt() {
  (void)close();  // CudaDevice::close() calls it first and reports its failures
}

Status CublasLt::close() {
  StatusJoin failures;
  if (api_) {
    for (auto& p : plans_) {
      if (p->a) failures.add(check(api_->layout_destroy(p->a), "cublasLtMatrixLayoutDestroy"));
      if (p->b) failures.add(check(api_->layout_destroy(p->b), "cublasLtMatrixLayoutDestroy"));
      if (p->c) failures.add(check(api_->layout_destroy(p->c), "cublasLtMatrixLayoutDestroy"));
      if (p->desc) failures.add(check(api_->desc_destroy(p->desc), "cublasLtMatmulDescDestroy"));
    }
    for (auto& d : dense_)
      if (d->layout) failures.add(check(api_->layout_destroy(d->layout), "cublasLtMatrixLayoutDestroy"));
    if (transform_desc_) failures.add(check(api_->transform_destroy(transform_desc_), "cublasLtMatrixTransformDescDestroy"));
    if (handle_) failures.add(check(api_->destroy(handle_), "cublasLtDestroy"));
  }
  plans_.clear();
  dense_.clear();
  transform_desc_ = nullptr;
  handle_ = nullptr;
  return failures.status();
}

Status CublasLt::check(cublasStatus_t s, const char* call) const {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok_status();
  const char* text = api_ && api_->status_string ? api_->status_string(s) : nullptr;
  return make_error(ErrorKind::kDevice, std::string(call) + ": " + (text ? text : "cublas status " + std::to_string(int(s))));
}

Result<const CublasLt::Plan*> CublasLt::plan_for(int m, int n, int k, int ld, bool out_f32, bool accumulate,
                                                 uint32_t align_w, uint32_t align_a, uint32_t align_c) {
  for (const auto& p : plans_)  // a handful of shapes per model: a linear scan
    if (p->m == m && p->n == n && p->k == k && p->ld == ld && p->out_f32 == out_f32 && p->accumulate == accumulate &&
        p->align_w == align_w && p->align_a == align_a && p->align_c == align_c)
      return p.get();
  const Api& a = *api_;
  auto plan = std::make_unique<Plan>();
  plan->m = m, plan->n = n, plan->k = k, plan->ld = ld, plan->out_f32 = out_f32, plan->accumulate = accumulate;
  plan->align_w = align_w, plan->align_a = align_a, plan->align_c = align_c;
  ColumnMajorGemm g = map_row_major_tn(uint64_t(m), uint64_t(n), uint64_t(k));
  g.lda = g.ldb = uint64_t(ld);  // a k slice: the rows of a and w keep their full stride
  KERN_RETURN_IF_ERROR(check(a.desc_create(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate"));
  const cublasOperation_t ta = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  KERN_RETURN_IF_ERROR(check(a.desc_set(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "cublasLtMatmulDescSetAttribute"));
  KERN_RETURN_IF_ERROR(check(a.desc_set(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "cublasLtMatmulDescSetAttribute"));
  KERN_RETURN_IF_ERROR(check(a.layout_create(&plan->a, CUDA_R_16BF, g.a_rows, g.a_cols, int64_t(g.lda)), "cublasLtMatrixLayoutCreate"));
  KERN_RETURN_IF_ERROR(check(a.layout_create(&plan->b, CUDA_R_16BF, g.b_rows, g.b_cols, int64_t(g.ldb)), "cublasLtMatrixLayoutCreate"));
  KERN_RETURN_IF_ERROR(check(a.layout_create(&plan->c, out_f32 ? CUDA_R_32F : CUDA_R_16BF, g.m, g.n, int64_t(g.ldc)),
                             "cublasLtMatrixLayoutCreate"));
  cublasLtMatmulPreference_t pref = nullptr;
  KERN_RETURN_IF_ERROR(check(a.pref_create(&pref), "cublasLtMatmulPreferenceCreate"));
  const uint64_t ws = workspace_bytes_;
  cublasStatus_t st = a.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  // The operands' actual alignments (cublasLt "A" = w, "B" = a, C = D = c):
  // the default assumes 256 B, and an algorithm relying on it would fail (or
  // read wrongly) on a slice that is not, inside a captured graph at that.
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_w}, {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c}, {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c}};
  for (const auto& [attr, bytes] : aligns)
    if (st == CUBLAS_STATUS_SUCCESS) st = a.pref_set(pref, attr, &bytes, sizeof bytes);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = a.heuristic(handle_, plan->desc, plan->a, plan->b, plan->c, plan->c, pref, 1, &result, &found);
  a.pref_destroy(pref);
  KERN_RETURN_IF_ERROR(check(st, "cublasLtMatmulAlgoGetHeuristic"));
  if (found == 0)
    return make_error(ErrorKind::kDevice, "cublasLt: no algorithm for bf16 gemm m=" + std::to_string(m) +
                                              " n=" + std::to_string(n) + " k=" + std::to_string(k));
  plan->algo = result.algo;
  plans_.push_back(std::move(plan));
  return plans_.back().get();
}

Status CublasLt::gemm_bf16_tn(CUstream stream, CUdeviceptr a, CUdeviceptr w, CUdeviceptr c, int m, int n, int k,
                              bool accumulate) {
  if (m <= 0 || n <= 0 || k <= 0) return Status::ok_status();  // empty product: nothing to write
  KERN_ASSIGN_OR_RETURN(auto plan, plan_for(m, n, k, k, false, accumulate, gemm_pointer_alignment(w),
                                            gemm_pointer_alignment(a), gemm_pointer_alignment(c)));
  return run(*plan, stream, a, w, c, accumulate);
}

Status CublasLt::gemm_bf16_tn_slice_f32(CUstream stream, CUdeviceptr a, CUdeviceptr w, CUdeviceptr c, int m, int n,
                                        int k, int ld, uint32_t align) {
  if (m <= 0 || n <= 0) return Status::ok_status();
  if (k <= 0 || ld < k)
    return make_error(ErrorKind::kDevice, "a k slice of " + std::to_string(k) + " columns in rows of " +
                                              std::to_string(ld));
  KERN_ASSIGN_OR_RETURN(auto plan, plan_for(m, n, k, ld, true, false, align, align, gemm_pointer_alignment(c)));
  return run(*plan, stream, a, w, c, false);
}

Status CublasLt::run(const Plan& p, CUstream stream, CUdeviceptr a, CUdeviceptr w, CUdeviceptr c, bool accumulate) {
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  // Column-major operands: "A" = w, "B" = a (gemm_mapping.h).
  return check(api_->matmul(handle_, p.desc, &alpha, reinterpret_cast<const void*>(w), p.a,
                            reinterpret_cast<const void*>(a), p.b, &beta, reinterpret_cast<const void*>(c), p.c,
                            reinterpret_cast<void*>(c), p.c, &p.algo, reinterpret_cast<void*>(workspace_),
                            workspace_bytes_, reinterpret_cast<cudaStream_t>(stream)),
               "cublasLtMatmul");
}

}  // namespace kern::load::cuda

namespace kern::load::cuda {

Result<cublasLtMatrixLayout_t> CublasLt::dense_layout(uint64_t rows, uint64_t cols, bool f32) {
  for (const auto& d : dense_)
    if (d->rows == rows && d->cols == cols && d->f32 == f32) return d->layout;
  auto d = std::make_unique<Dense>();
  d->rows = rows, d->cols = cols, d->f32 = f32;
  // Row-major [rows, cols] = column-major cols x rows, ld cols.
  KERN_RETURN_IF_ERROR(check(api_->layout_create(&d->layout, f32 ? CUDA_R_32F : CUDA_R_16BF, cols, rows,
                                                 int64_t(cols)),
                             "cublasLtMatrixLayoutCreate"));
  dense_.push_back(std::move(d));
  return dense_.back()->layout;
}

Status CublasLt::add_f32(CUstream stream, CUdeviceptr x, CUdeviceptr y, CUdeviceptr out, uint64_t rows,
                         uint64_t cols, bool out_bf16) {
  if (rows == 0 || cols == 0) return Status::ok_status();
  if (transform_desc_ == nullptr)
    KERN_RETURN_IF_ERROR(check(api_->transform_create(&transform_desc_, CUDA_R_32F), "cublasLtMatrixTransformDescCreate"));
  KERN_ASSIGN_OR_RETURN(cublasLtMatrixLayout_t in, dense_layout(rows, cols, true));
  KERN_ASSIGN_OR_RETURN(cublasLtMatrixLayout_t to, dense_layout(rows, cols, !out_bf16));
  // alpha = beta = 1: each product is exact, so out = fl(x + y), one rounding
  // (to f32, or to bf16 when out_bf16); beta = 0 and no y: out = x converted.
  const float one = 1.0f, zero = 0.0f;
  const bool has_y = y != 0;
  return check(api_->transform(handle_, transform_desc_, &one, reinterpret_cast<const void*>(x), in,
                               has_y ? &one : &zero, has_y ? reinterpret_cast<const void*>(y) : nullptr,
                               has_y ? in : nullptr, reinterpret_cast<void*>(out), to,
                               reinterpret_cast<cudaStream_t>(stream)),
               "cublasLtMatrixTransform");
}

}  // namespace kern::load::cuda
