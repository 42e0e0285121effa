// A tiny shared library for the CUDA library tests: library_search_test copies
// it into fabricated toolkit / wheel directories under CUDA library names to
// prove they are found; cuda_device_test loads it as a fake cublasLt (the
// entry points kern-load/cuda/cublaslt.cpp resolves, C ABI, no CUDA header
// needed) that records what the heuristic was asked, to check the alignment
// preferences, the plan cache and that the library is never unloaded.
#include <cstddef>
#include <cstdint>
#include <cstring>

extern "C" int kern_fake_cuda_library() { return 42; }

namespace {

/// What the fake cublasLt saw; read by the test through kern_fake_cublaslt_state().
struct FakeCublasLtState {
  int handles = 0;            ///< live handles (create - destroy)
  int heuristic_calls = 0;    ///< cublasLtMatmulAlgoGetHeuristic calls
  int matmul_calls = 0;       ///< cublasLtMatmul calls
  uint64_t last_pref[16] = {};  ///< the preference of the last heuristic call, by attribute id
};
FakeCublasLtState g_state;

struct FakePreference {
  uint64_t values[16] = {};
};
int g_object;  // the address handed out for handles, descriptors and layouts

}  // namespace

extern "C" {
FakeCublasLtState* kern_fake_cublaslt_state() { return &g_state; }

int cublasLtCreate(void** handle) {
  *handle = &g_object;
  ++g_state.handles;
  return 0;
}
int cublasLtDestroy(void*) {
  --g_state.handles;
  return 0;
}
const char* cublasLtGetStatusString(int) { return "fake status"; }
int cublasLtMatmulDescCreate(void** desc, int, int) {
  *desc = &g_object;
  return 0;
}
int cublasLtMatmulDescDestroy(void*) { return 0; }
int cublasLtMatmulDescSetAttribute(void*, int, const void*, size_t) { return 0; }
int cublasLtMatrixLayoutCreate(void** layout, int, uint64_t, uint64_t, int64_t) {
  *layout = &g_object;
  return 0;
}
int cublasLtMatrixLayoutDestroy(void*) { return 0; }
int cublasLtMatmulPreferenceCreate(void** pref) {
  *pref = new FakePreference();
  return 0;
}
int cublasLtMatmulPreferenceDestroy(void* pref) {
  delete static_cast<FakePreference*>(pref);
  return 0;
}
int cublasLtMatmulPreferenceSetAttribute(void* pref, int attr, const void* buf, size_t size) {
  if (attr < 0 || attr >= 16 || size > 8) return 7;  // CUBLAS_STATUS_INVALID_VALUE
  uint64_t v = 0;
  std::memcpy(&v, buf, size);
  static_cast<FakePreference*>(pref)->values[attr] = v;
  return 0;
}
int cublasLtMatmulAlgoGetHeuristic(void*, void*, void*, void*, void*, void*, void* pref, int, void*, int* found) {
  ++g_state.heuristic_calls;
  std::memcpy(g_state.last_pref, static_cast<FakePreference*>(pref)->values, sizeof g_state.last_pref);
  *found = 1;
  return 0;
}
int cublasLtMatmul(void*, void*, const void*, const void*, void*, const void*, void*, const void*, const void*, void*,
                   void*, void*, const void*, void*, size_t, void*) {
  ++g_state.matmul_calls;
  return 0;
}
// The transform kern-load resolves at load for tensor parallelism's adds
// (kern-load/cuda/cublaslt.cpp); never called here.
int cublasLtMatrixTransformDescCreate(void** desc, int) {
  static int fake_desc = 0;
  *desc = &fake_desc;
  return 0;
}
int cublasLtMatrixTransformDescDestroy(void*) { return 0; }
int cublasLtMatrixTransform(void*, void*, const void*, const void*, void*, const void*, const void*, void*, void*,
                            void*, void*) {
  return 0;
}
}
