// What the simulated libcuda.so.1 exports to the simulated libcublasLt.so.13
// besides the driver API: cublasLt work must run on the driver's streams (in
// order with the kernels, captured into graphs) and feed its shadow. The
// cublasLt library links against the driver library, so both share one
// driver state.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <string>

extern "C++" {
/// Queues `work` (returns "" or a violation) on `stream` as a launch would:
/// CUDA_ERROR_INVALID_CONTEXT without a current context, _INVALID_HANDLE for
/// an unknown stream; recorded into the stream's capture when it captures.
__attribute__((visibility("default"))) CUresult kern_sim_enqueue_host_work(CUstream stream, const std::string& what,
                                                                            std::function<std::string()> work);
/// Whether [addr, addr + bytes) lies inside one device allocation.
__attribute__((visibility("default"))) bool kern_sim_device_range(uint64_t addr, uint64_t bytes);
/// Marks [addr, addr + bytes) written in the global-memory shadow by a GPU
/// launch (a GEMM): a later PDL kernel must pdl_wait() before reading it.
__attribute__((visibility("default"))) void kern_sim_shadow_launch_write(uint64_t addr, uint64_t bytes);
}
