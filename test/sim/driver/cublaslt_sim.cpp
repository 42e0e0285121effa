// The simulated libcublasLt.so.13: the cublasLt calls kern-load makes
// (kern-load/cuda/cublaslt.cpp), with the real library's checks on
// descriptors, layouts and preferences (types, transposes, leading
// dimensions, workspace, pointer alignment against the algorithm's
// requirement) and the matmul by cublasLt's documented column-major
// semantics: D = alpha * op(A) op(B) + beta * C with f32 accumulation, in
// order over k, and one rounding to D's type. The work runs on the simulated
// driver's stream (sim_hooks.h), so it is ordered with the kernels and
// captured into graphs like them.
#include <cublasLt.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "common/bf16.h"
#include "test/sim/driver/sim_hooks.h"

struct cublasLtContext {
  int magic = 0x4C74;
};

namespace {

struct Desc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
};

struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
};

struct Pref {
  uint64_t max_workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256};  // A, B, C, D (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES)
};

/// What the simulated heuristic writes into cublasLtMatmulAlgo_t.data.
constexpr uint64_t kAlgoMagic = 0x6b65726e53494d31ull;  // "kernSIM1"
constexpr uint64_t kAlgoWorkspace = 1u << 20;           // an algorithm that uses 1 MiB when allowed

std::mutex mu;
std::set<const void*> live;  // every live handle and descriptor (handle checks)

template <typename T>
T* get(const void* h) {
  std::lock_guard<std::mutex> lock(mu);
  return live.count(h) ? static_cast<T*>(const_cast<void*>(h)) : nullptr;
}

template <typename T>
void add(T* p) {
  std::lock_guard<std::mutex> lock(mu);
  live.insert(p);
}

bool drop(const void* p) {
  std::lock_guard<std::mutex> lock(mu);
  return live.erase(p) == 1;
}

size_t elem_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

/// The problem a descriptor set describes, checked as cublasLt checks it.
struct Problem {
  uint64_t m = 0, n = 0, k = 0;
  std::string error;  ///< why the combination is invalid ("" = valid)
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
};

Problem check_problem(const Desc* d, const Layout* a, const Layout* b, const Layout* c, const Layout* dl) {
  Problem p;
  auto fail = [&](cublasStatus_t s, std::string why) {
    p.status = s;
    p.error = std::move(why);
    return p;
  };
  if (!d || !a || !b || !c || !dl) return fail(CUBLAS_STATUS_INVALID_VALUE, "a null or destroyed descriptor");
  if (d->compute != CUBLAS_COMPUTE_32F || d->scale != CUDA_R_32F)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "only CUBLAS_COMPUTE_32F with CUDA_R_32F scale is simulated");
  if (a->type != CUDA_R_16BF || b->type != CUDA_R_16BF)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "A and B must be CUDA_R_16BF (the simulated type combination)");
  if (c->type != dl->type || (c->type != CUDA_R_16BF && c->type != CUDA_R_32F))
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "C and D must both be CUDA_R_16BF or CUDA_R_32F");
  for (const Layout* l : {a, b, c, dl})
    if (l->ld < int64_t(std::max<uint64_t>(l->rows, 1)))
      return fail(CUBLAS_STATUS_INVALID_VALUE, "a leading dimension below the column-major row count");
  const bool ta = d->transa != CUBLAS_OP_N, tb = d->transb != CUBLAS_OP_N;
  const uint64_t am = ta ? a->cols : a->rows, ak = ta ? a->rows : a->cols;
  const uint64_t bk = tb ? b->cols : b->rows, bn = tb ? b->rows : b->cols;
  if (ak != bk) return fail(CUBLAS_STATUS_INVALID_VALUE, "op(A) is " + std::to_string(am) + "x" + std::to_string(ak) +
                                                            ", op(B) is " + std::to_string(bk) + "x" + std::to_string(bn));
  if (c->rows != am || c->cols != bn || dl->rows != am || dl->cols != bn)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "C/D are not " + std::to_string(am) + "x" + std::to_string(bn));
  p.m = am, p.n = bn, p.k = ak;
  return p;
}

void note(const char* call, const std::string& why) { std::fprintf(stderr, "kern sim: %s: %s\n", call, why.c_str()); }

float load(const void* base, cudaDataType_t t, uint64_t idx) {
  if (t == CUDA_R_32F) {
    float v;
    std::memcpy(&v, static_cast<const uint8_t*>(base) + idx * 4, 4);
    return v;
  }
  uint16_t v;
  std::memcpy(&v, static_cast<const uint8_t*>(base) + idx * 2, 2);
  return kern::bf16_to_f32(v);
}

void store(void* base, cudaDataType_t t, uint64_t idx, float v) {
  if (t == CUDA_R_32F) {
    std::memcpy(static_cast<uint8_t*>(base) + idx * 4, &v, 4);
    return;
  }
  const uint16_t b = kern::f32_to_bf16(v);
  std::memcpy(static_cast<uint8_t*>(base) + idx * 2, &b, 2);
}

/// Bytes a column-major matrix spans from its pointer.
uint64_t span_bytes(const Layout& l) {
  if (l.rows == 0 || l.cols == 0) return 0;
  return (uint64_t(l.ld) * (l.cols - 1) + l.rows) * elem_bytes(l.type);
}

}  // namespace

#define LT_EXPORT extern "C" __attribute__((visibility("default")))

LT_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* h = new cublasLtContext();
  add(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (!drop(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT const char* cublasLtGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "unknown cublas status";
  }
}

LT_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* out, cublasComputeType_t compute,
                                                  cudaDataType_t scale) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* d = new Desc{compute, scale};
  add(d);
  *out = reinterpret_cast<cublasLtMatmulDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  if (!drop(desc)) return CUBLAS_STATUS_INVALID_VALUE;
  delete reinterpret_cast<Desc*>(desc);
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                                        const void* buf, size_t size) {
  Desc* d = get<Desc>(desc);
  if (d == nullptr || buf == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int32_t v = 0;
  if (size != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;  // every attribute simulated here is 32-bit
  std::memcpy(&v, buf, 4);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB:
      if (v != CUBLAS_OP_N && v != CUBLAS_OP_T) {
        note("cublasLtMatmulDescSetAttribute", "only CUBLAS_OP_N and CUBLAS_OP_T are simulated");
        return CUBLAS_STATUS_INVALID_VALUE;
      }
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? d->transa : d->transb) = v;
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_TRANSC:
      return v == CUBLAS_OP_N ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;  // "only CUBLAS_OP_N is supported"
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: d->compute = cublasComputeType_t(v); return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: d->scale = cudaDataType_t(v); return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      return v == CUBLASLT_POINTER_MODE_HOST ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return v == CUBLASLT_EPILOGUE_DEFAULT ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    default:
      note("cublasLtMatmulDescSetAttribute", "attribute " + std::to_string(int(attr)) + " is not simulated");
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

LT_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* out, cudaDataType type, uint64_t rows,
                                                    uint64_t cols, int64_t ld) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (ld < 0 || rows > (uint64_t(1) << 40) || cols > (uint64_t(1) << 40)) return CUBLAS_STATUS_INVALID_VALUE;
  auto* l = new Layout{type, rows, cols, ld};
  add(l);
  *out = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  if (!drop(layout)) return CUBLAS_STATUS_INVALID_VALUE;
  delete reinterpret_cast<Layout*>(layout);
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* out) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* p = new Pref();
  add(p);
  *out = reinterpret_cast<cublasLtMatmulPreference_t>(p);
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  if (!drop(pref)) return CUBLAS_STATUS_INVALID_VALUE;
  delete reinterpret_cast<Pref*>(pref);
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                              cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                              size_t size) {
  Pref* p = get<Pref>(pref);
  if (p == nullptr || buf == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      if (size != sizeof(uint64_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&p->max_workspace, buf, 8);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
      if (size != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      uint32_t v;
      std::memcpy(&v, buf, 4);
      p->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] = v;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
      return CUBLAS_STATUS_SUCCESS;
    default:
      note("cublasLtMatmulPreferenceSetAttribute", "attribute " + std::to_string(int(attr)) + " is not simulated");
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

LT_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                        cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                        cublasLtMatmulPreference_t pref, int requested,
                                                        cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (get<cublasLtContext>(handle) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  Pref* p = get<Pref>(pref);
  if (p == nullptr || requested <= 0 || results == nullptr || returned == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const Problem pr = check_problem(get<Desc>(desc), get<Layout>(a), get<Layout>(b), get<Layout>(c), get<Layout>(d));
  if (pr.status != CUBLAS_STATUS_SUCCESS) {
    note("cublasLtMatmulAlgoGetHeuristic", pr.error);
    return pr.status;
  }
  // The one simulated algorithm: it needs the elements aligned (bf16: 2 B)
  // and the alignment the preference promises (default 256 B) on every
  // pointer, and 1 MiB of workspace when the preference allows it.
  for (uint32_t al : p->align)
    if (al == 0 || (al & (al - 1)) != 0) return CUBLAS_STATUS_INVALID_VALUE;
  cublasLtMatmulHeuristicResult_t r{};
  r.algo.data[0] = kAlgoMagic;
  r.algo.data[1] = pr.m, r.algo.data[2] = pr.n, r.algo.data[3] = pr.k;
  for (int i = 0; i < 4; ++i) r.algo.data[4] |= uint64_t(p->align[i]) << (16 * i);
  r.workspaceSize = p->max_workspace >= kAlgoWorkspace ? kAlgoWorkspace : 0;
  r.algo.data[5] = r.workspaceSize;
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1.0f;
  results[0] = r;
  for (int i = 1; i < requested; ++i) results[i] = cublasLtMatmulHeuristicResult_t{};
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                                        const void* A, cublasLtMatrixLayout_t a, const void* B,
                                        cublasLtMatrixLayout_t b, const void* beta, const void* C,
                                        cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                                        const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                                        cudaStream_t stream) {
  if (get<cublasLtContext>(handle) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const Desc* dd = get<Desc>(desc);
  const Layout *la = get<Layout>(a), *lb = get<Layout>(b), *lc = get<Layout>(c), *ld = get<Layout>(d);
  const Problem pr = check_problem(dd, la, lb, lc, ld);
  if (pr.status != CUBLAS_STATUS_SUCCESS) {
    note("cublasLtMatmul", pr.error);
    return pr.status;
  }
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (algo == nullptr) {
    note("cublasLtMatmul", "no algorithm given (the simulation has no implicit heuristic)");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (algo->data[0] != kAlgoMagic || algo->data[1] != pr.m || algo->data[2] != pr.n || algo->data[3] != pr.k) {
    note("cublasLtMatmul", "the algorithm was not chosen by the heuristic for this problem");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const void* ptrs[4] = {A, B, C, D};
  const char* names = "ABCD";
  for (int i = 0; i < 4; ++i) {
    const uint64_t need = (algo->data[4] >> (16 * i)) & 0xFFFF;
    const uint64_t elem = elem_bytes(i < 2 ? CUDA_R_16BF : lc->type);
    const auto p = reinterpret_cast<uint64_t>(ptrs[i]);
    if (p % elem != 0 || p % need != 0) {
      note("cublasLtMatmul", std::string("matrix ") + names[i] + " at " + std::to_string(p) + " is not " +
                                 std::to_string(std::max(need, elem)) +
                                 "-byte aligned, as the algorithm chosen under the preference's MIN_ALIGNMENT requires");
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  }
  if (workspace_bytes < algo->data[5] || (algo->data[5] > 0 && workspace == nullptr)) {
    note("cublasLtMatmul", "workspace of " + std::to_string(workspace_bytes) + " B, the algorithm needs " +
                               std::to_string(algo->data[5]) + " B");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  float al, be;  // host pointer mode: read at the call (and so at capture)
  std::memcpy(&al, alpha, 4);
  std::memcpy(&be, beta, 4);
  const Layout A_ = *la, B_ = *lb, C_ = *lc, D_ = *ld;
  const bool ta = dd->transa != CUBLAS_OP_N, tb = dd->transb != CUBLAS_OP_N;
  const uint64_t m = pr.m, n = pr.n, k = pr.k;
  const uint64_t ws = reinterpret_cast<uint64_t>(workspace), ws_bytes = algo->data[5];
  auto work = [=]() -> std::string {
    const struct {
      const void* p;
      const Layout* l;
      char name;
    } ops[4] = {{A, &A_, 'A'}, {B, &B_, 'B'}, {be != 0.0f ? C : nullptr, &C_, 'C'}, {D, &D_, 'D'}};
    for (const auto& o : ops)  // a GPU faults on these: the simulation reports them
      if (o.p && !kern_sim_device_range(reinterpret_cast<uint64_t>(o.p), span_bytes(*o.l)))
        return std::string("matrix ") + o.name + " [" + std::to_string(reinterpret_cast<uint64_t>(o.p)) + ", +" +
               std::to_string(span_bytes(*o.l)) + " B) is not inside one device allocation";
    if (ws_bytes > 0 && !kern_sim_device_range(ws, ws_bytes)) return "the workspace is not device memory";
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t i = 0; i < m; ++i) {
        float acc = 0.0f;
        for (uint64_t l = 0; l < k; ++l) {
          const uint64_t ai = ta ? l + i * uint64_t(A_.ld) : i + l * uint64_t(A_.ld);
          const uint64_t bi = tb ? j + l * uint64_t(B_.ld) : l + j * uint64_t(B_.ld);
          acc += load(A, CUDA_R_16BF, ai) * load(B, CUDA_R_16BF, bi);
        }
        float out = al * acc;
        if (be != 0.0f) out += be * load(C, C_.type, i + j * uint64_t(C_.ld));  // C is not read when beta == 0
        store(D, D_.type, i + j * uint64_t(D_.ld), out);
      }
    for (uint64_t j = 0; j < n; ++j)
      kern_sim_shadow_launch_write(reinterpret_cast<uint64_t>(D) + j * uint64_t(D_.ld) * elem_bytes(D_.type),
                            m * elem_bytes(D_.type));
    return "";
  };
  const std::string what = "cublasLtMatmul m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
  const CUresult r = kern_sim_enqueue_host_work(reinterpret_cast<CUstream>(stream), what, work);
  if (r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_INVALID_HANDLE) return CUBLAS_STATUS_NOT_INITIALIZED;
  return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

// cublasLtMatrixTransform (C = alpha op(A) + beta op(B)), for the adds of the
// split-K and all-reduce trees (kern-load/cuda/cuda_collective.cpp): f32
// scale, no transposes, A and B f32, C f32 or bf16, equal shapes; each
// element alpha * a + beta * b in f32 (exact products when alpha and beta
// are 1), rounded once to C's type. B may be absent when beta is 0.
namespace {
struct TransformDesc {
  cudaDataType_t scale;
};
}  // namespace

LT_EXPORT cublasStatus_t cublasLtMatrixTransformDescCreate(cublasLtMatrixTransformDesc_t* out, cudaDataType scale) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto* d = new TransformDesc{scale};
  add(d);
  *out = reinterpret_cast<cublasLtMatrixTransformDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtMatrixTransformDescDestroy(cublasLtMatrixTransformDesc_t desc) {
  if (!drop(desc)) return CUBLAS_STATUS_INVALID_VALUE;
  delete reinterpret_cast<TransformDesc*>(desc);
  return CUBLAS_STATUS_SUCCESS;
}

LT_EXPORT cublasStatus_t cublasLtMatrixTransform(cublasLtHandle_t handle, cublasLtMatrixTransformDesc_t desc,
                                                 const void* alpha, const void* A, cublasLtMatrixLayout_t a,
                                                 const void* beta, const void* B, cublasLtMatrixLayout_t b, void* C,
                                                 cublasLtMatrixLayout_t c, cudaStream_t stream) {
  if (get<cublasLtContext>(handle) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const TransformDesc* d = get<TransformDesc>(desc);
  const Layout *la = get<Layout>(a), *lb = B ? get<Layout>(b) : nullptr, *lc = get<Layout>(c);
  if (d == nullptr || la == nullptr || lc == nullptr || alpha == nullptr || beta == nullptr || A == nullptr ||
      C == nullptr || (B != nullptr && lb == nullptr))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (d->scale != CUDA_R_32F || la->type != CUDA_R_32F || (lb && lb->type != CUDA_R_32F) ||
      (lc->type != CUDA_R_32F && lc->type != CUDA_R_16BF)) {
    note("cublasLtMatrixTransform", "only f32 scale, f32 A and B and an f32 or bf16 C are simulated");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  for (const Layout* l : {la, lb, lc})
    if (l && (l->rows != lc->rows || l->cols != lc->cols || l->ld < int64_t(std::max<uint64_t>(l->rows, 1)))) {
      note("cublasLtMatrixTransform", "A, B and C must have C's shape and valid leading dimensions");
      return CUBLAS_STATUS_INVALID_VALUE;
    }
  float al, be;  // host pointer mode
  std::memcpy(&al, alpha, 4);
  std::memcpy(&be, beta, 4);
  if (be != 0.0f && B == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const Layout A_ = *la, C_ = *lc, B_ = lb ? *lb : *la;
  const bool use_b = B != nullptr && be != 0.0f;
  auto work = [=]() -> std::string {
    if (!kern_sim_device_range(reinterpret_cast<uint64_t>(A), span_bytes(A_)) ||
        (use_b && !kern_sim_device_range(reinterpret_cast<uint64_t>(B), span_bytes(B_))) ||
        !kern_sim_device_range(reinterpret_cast<uint64_t>(C), span_bytes(C_)))
      return "cublasLtMatrixTransform: a matrix is not inside one device allocation";
    for (uint64_t j = 0; j < C_.cols; ++j)
      for (uint64_t i = 0; i < C_.rows; ++i) {
        float v = al * load(A, CUDA_R_32F, i + j * uint64_t(A_.ld));
        if (use_b) v += be * load(B, CUDA_R_32F, i + j * uint64_t(B_.ld));
        store(C, C_.type, i + j * uint64_t(C_.ld), v);
      }
    for (uint64_t j = 0; j < C_.cols; ++j)
      kern_sim_shadow_launch_write(reinterpret_cast<uint64_t>(C) + j * uint64_t(C_.ld) * elem_bytes(C_.type),
                                   C_.rows * elem_bytes(C_.type));
    return "";
  };
  const std::string what = "cublasLtMatrixTransform " + std::to_string(C_.rows) + "x" + std::to_string(C_.cols);
  const CUresult r = kern_sim_enqueue_host_work(reinterpret_cast<CUstream>(stream), what, work);
  if (r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_INVALID_HANDLE) return CUBLAS_STATUS_NOT_INITIALIZED;
  return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
