// The part of NCCL's C ABI (nccl.h, NCCL 2.x) that kern calls, declared here
// so that the cuda device builds where the CUDA headers come without nccl.h
// (Debian's nvidia-cuda-dev ships none): the types and enum values below are
// nccl.h's, unchanged since NCCL 2.0. The library itself is dlopened (nccl.h
// of the cuda device's NcclComm) and the simulated libnccl (test/sim/nccl)
// implements these functions.
#pragma once

#include <cuda.h>

#include <cstddef>

extern "C" {

/// nccl.h: an opaque communicator.
typedef struct ncclComm* ncclComm_t;
/// nccl.h: NCCL_UNIQUE_ID_BYTES.
inline constexpr size_t kNcclUniqueIdBytes = 128;
/// nccl.h: the id rank 0 makes (ncclGetUniqueId) and every rank passes to ncclCommInitRank.
typedef struct {
  char internal[kNcclUniqueIdBytes];
} ncclUniqueId;
/// nccl.h's ncclResult_t values.
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;
/// nccl.h's ncclDataType_t values kern uses.
typedef enum { ncclFloat32 = 7, ncclBfloat16 = 9 } ncclDataType_t;

/// NCCL_VERSION(X, Y, Z) of nccl.h for 2.9 and later: the code ncclGetVersion returns.
constexpr int nccl_version_code(int major, int minor, int patch) { return major * 10000 + minor * 100 + patch; }

using NcclGetVersionFn = ncclResult_t (*)(int* version);
using NcclGetUniqueIdFn = ncclResult_t (*)(ncclUniqueId* id);
using NcclCommInitRankFn = ncclResult_t (*)(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
using NcclCommDestroyFn = ncclResult_t (*)(ncclComm_t comm);
using NcclCommAbortFn = ncclResult_t (*)(ncclComm_t comm);
using NcclGetErrorStringFn = const char* (*)(ncclResult_t result);
using NcclGetLastErrorFn = const char* (*)(ncclComm_t comm);
/// ncclAllGather: recvbuff[r * sendcount ...] = rank r's sendbuff, on `stream`.
using NcclAllGatherFn = ncclResult_t (*)(const void* sendbuff, void* recvbuff, size_t sendcount,
                                         ncclDataType_t datatype, ncclComm_t comm, CUstream stream);
}
