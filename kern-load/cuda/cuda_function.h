// What the cuda device reads from a loaded CUfunction (cuFuncGetParamInfo,
// cuFuncGetAttribute) and how it ends a stream capture that a failed launch
// invalidated: free functions over a DriverApi table, so that a test drives
// them with a fake driver (test/gpu/cuda_device_test.cpp), like launch_kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/result.h"
#include "kern-load/cuda/cuda_abi.h"
#include "kern-load/cuda/cuda_driver.h"

namespace kern::load::cuda {

/// The most params a kernel can have: 32764 bytes of parameter space
/// (CUDA 12.1+, cuda.h "cuLaunchKernel") of at least one byte each. A driver
/// answering more is broken; the loop stops there instead of running on.
inline constexpr size_t kMaxKernelParams = 32764;

/// The device-side parameter layout of `fn`: cuFuncGetParamInfo at index
/// 0, 1, ... until it answers CUDA_ERROR_INVALID_VALUE ("paramIndex must be
/// less than the number of parameters", cuda.h). The driver gives the same
/// code for an invalid function, so the handle is checked first with
/// cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS): a bad handle is an error,
/// never "0 params". Errors (kDevice) name the call and the CUresult.
Result<std::vector<ParamSlot>> read_param_layout(const DriverApi& api, CUfunction fn);

/// A function's shared memory as the driver reports it (bytes).
struct FunctionSharedMemory {
  uint64_t static_bytes = 0;       ///< CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (__shared__ arrays)
  uint64_t max_dynamic_bytes = 0;  ///< CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (default 48 KiB minus static)
};

/// Reads both attributes of `fn`. Errors (kDevice) name the attribute.
Result<FunctionSharedMemory> read_shared_memory(const DriverApi& api, CUfunction fn);

/// Ends a capture on `stream` that is being abandoned (a launch inside it
/// failed): cuStreamEndCapture, then cuGraphDestroy of a partial graph if
/// the driver returned one. CUDA_ERROR_STREAM_CAPTURE_INVALIDATED is the
/// answer expected from a capture the failed launch invalidated: it is not
/// reported (the launch's own error is the one that matters). Any other
/// failure is returned (kDevice), naming its call.
Status end_abandoned_capture(const DriverApi& api, CUstream stream);

}  // namespace kern::load::cuda
