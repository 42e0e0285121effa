// Reading a CUfunction's params and shared memory, ending an abandoned
// capture (cuda_function.h).
#include "kern-load/cuda/cuda_function.h"

#include <string>

namespace kern::load::cuda {

namespace {

Error cu_error(const DriverApi& api, const std::string& call, CUresult r) {
  return make_error(ErrorKind::kDevice, call + ": " + describe_cu_result(api, r));
}

}  // namespace

Result<std::vector<ParamSlot>> read_param_layout(const DriverApi& api, CUfunction fn) {
  int regs = 0;
  const CUresult valid = api.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
  if (valid != CUDA_SUCCESS) return cu_error(api, "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS)", valid);
  std::vector<ParamSlot> out;
  for (size_t i = 0; i < kMaxKernelParams; ++i) {
    size_t offset = 0, size = 0;
    const CUresult r = api.cuFuncGetParamInfo(fn, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) return out;  // the handle is valid: index i is past the last param
    if (r != CUDA_SUCCESS) return cu_error(api, "cuFuncGetParamInfo(param " + std::to_string(i) + ")", r);
    out.push_back(ParamSlot{offset, size});
  }
  return make_error(ErrorKind::kDevice, "cuFuncGetParamInfo: the driver reports more than " +
                                            std::to_string(kMaxKernelParams) + " params");
}

Result<FunctionSharedMemory> read_shared_memory(const DriverApi& api, CUfunction fn) {
  int static_bytes = 0, dynamic = 0;
  CUresult r = api.cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
  if (r != CUDA_SUCCESS) return cu_error(api, "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)", r);
  r = api.cuFuncGetAttribute(&dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn);
  if (r != CUDA_SUCCESS) return cu_error(api, "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)", r);
  return FunctionSharedMemory{static_cast<uint64_t>(static_bytes < 0 ? 0 : static_bytes),
                              static_cast<uint64_t>(dynamic < 0 ? 0 : dynamic)};
}

Status end_abandoned_capture(const DriverApi& api, CUstream stream) {
  CUgraph graph = nullptr;
  const CUresult r = api.cuStreamEndCapture(stream, &graph);
  Status ended = Status::ok_status();
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) ended = cu_error(api, "cuStreamEndCapture", r);
  if (graph != nullptr) {
    const CUresult d = api.cuGraphDestroy(graph);
    if (d != CUDA_SUCCESS) return join(std::move(ended), cu_error(api, "cuGraphDestroy", d));
  }
  return ended;
}

}  // namespace kern::load::cuda
