// NCCL loaded with dlopen (libnccl.so.2, found as library_search.h says:
// loader, CUDA_HOME, CUDA wheels such as nvidia-nccl-cu13) for the cuda
// device's collective extern ops (docs/parallel.md "On GPUs"). Only the
// transport comes from NCCL: an all-gather of the ranks' f32 partials; the
// sum is the device's own fixed-order tree, so the bits never depend on
// NCCL's ring or tree order. Why dlopen: every kern binary runs where NCCL
// is absent until a run asks for --tp N > 1 on the cuda device, and then the
// error names the library and the version needed.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "kern-load/cuda/nccl_abi.h"

namespace kern::load::cuda {

/// The oldest NCCL kern accepts (ncclGetVersion's code): 2.18.1. Older
/// releases are refused rather than run untested.
inline constexpr int kNcclMinVersion = nccl_version_code(2, 18, 1);

/// "2.18.1" from a version code (nccl_version_code).
std::string nccl_version_text(int code);

/// One rank's NCCL communicator. Not thread-safe; the calls enqueue on the
/// stream they are given, so they are ordered with the kernels and captured
/// into graphs like them.
class NcclComm {
 public:
  /// dlopens libnccl.so.2 (`library`: empty to search; a path with '/' loads
  /// that file only) and checks ncclGetVersion >= kNcclMinVersion.
  /// Errors (kDevice): library missing (every path tried), a missing symbol,
  /// or too old ("NCCL 2.12.3 is too old: kern needs 2.18.1 or newer").
  static Result<std::unique_ptr<NcclComm>> load(const std::string& library = {});
  /// Destroys the communicator (close()), dropping its failures.
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  /// ncclGetUniqueId: rank 0's id, which every rank passes to init_rank.
  Result<ncclUniqueId> unique_id();
  /// ncclCommInitRank(world, id, rank) on the calling thread's current
  /// context's device. Blocks until every rank has joined (NCCL's own
  /// bootstrap; NCCL_COMM_BLOCKING default). Errors name the call and NCCL's
  /// last error text.
  Status init_rank(const ncclUniqueId& id, uint32_t rank, uint32_t world);
  /// ncclAllGather of `count` f32 per rank on `stream`: out[r * count + i] =
  /// rank r's in[i]. Device pointers; `out` holds world x count floats.
  Status all_gather_f32(CUdeviceptr in, CUdeviceptr out, uint64_t count, CUstream stream);
  /// ncclCommDestroy (after the caller has waited for the stream). Idempotent.
  Status close();

  /// The version found (ncclGetVersion's code) and what was dlopened.
  int version() const { return version_; }
  const std::string& path() const { return path_; }

 private:
  struct Api;
  NcclComm() = default;
  Status check(ncclResult_t r, const char* call) const;

  void* handle_lib_ = nullptr;  ///< never dlclosed (as cublasLt: NCCL's threads outlive the last call)
  std::string path_;
  std::unique_ptr<Api> api_;
  ncclComm_t comm_ = nullptr;
  int version_ = 0;
};

}  // namespace kern::load::cuda
