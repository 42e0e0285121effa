// Tensor parallelism on the cuda device (docs/parallel.md "On GPUs"): the
// split-K GEMMs and the all-reduces of a TP plan, with the cpu device's
// kernels (kernels-src/cpu/gemm_splitk.cpp, collective_ops.cpp) as their
// twins. Each k slice is one cublasLt GEMM with an f32 output (the path of
// extern:cublaslt_bf16_tn), and every sum of two partials is one
// cublasLtMatrixTransform (out = 1 * x + 1 * y: one f32 rounding), issued in
// the pairwise tree of the cpu twin (tree_sum_f32): at TP = N a rank's tree
// over its slices is a subtree of TP = 1's, and the all-reduce's tree over
// the ranks' partials (all-gathered by NCCL, in rank order) completes it, so
// TP = N gives TP = 1's bits on the cuda device too. NCCL's own
// ncclAllReduce is not used: its ring or tree order depends on the world and
// the topology, and so would the bits.
#include <algorithm>
#include <array>
#include <cstring>

#include "kern-load/cuda/cuda_device.h"
#include "kern-load/cuda/gemm_mapping.h"

namespace kern::load::cuda {

namespace {

constexpr int64_t kMaxSplits = 64;  // as the cpu twin
/// The scratch buffers are first sized for at least this many rows (split-K)
/// or bytes (all-gather): cuMemAlloc is not allowed while a graph is being
/// captured, and a decode batch captured after a short prefill needs more
/// rows than that prefill did.
constexpr uint64_t kMinScratchRows = 256;
constexpr uint64_t kMinGatherBytes = 8ull << 20;

std::string step_name(uint32_t step, const std::vector<std::string>& symbols) {
  return "steps[" + std::to_string(step) + "] " + (step < symbols.size() ? symbols[step] : "?");
}

}  // namespace

Status CudaDevice::attach_collective(std::unique_ptr<cpu::Collective> collective) {
  if (!collective) return make_error(ErrorKind::kDevice, "no tensor-parallel endpoint to attach");
  KERN_RETURN_IF_ERROR(bind_thread());
  const uint32_t rank = collective->rank(), world = collective->world();
  auto loaded = NcclComm::load();
  if (!loaded.ok()) return loaded.error().with_context("rank " + std::to_string(rank));
  std::unique_ptr<NcclComm> nccl = std::move(loaded).value();
  // ncclGetUniqueId on rank 0, shared over the ranks' rendezvous (an
  // all-gather where only rank 0's bytes count), as torch.distributed shares
  // it over its store.
  ncclUniqueId id{};
  if (rank == 0) {
    KERN_ASSIGN_OR_RETURN(id, nccl->unique_id(), "rank 0");
  }
  std::vector<char> all(size_t(world) * sizeof id);
  KERN_RETURN_IF_ERROR(collective->all_gather(&id, all.data(), sizeof id), "sharing rank 0's NCCL unique id");
  std::memcpy(&id, all.data(), sizeof id);
  KERN_RETURN_IF_ERROR(nccl->init_rank(id, rank, world), "rank " + std::to_string(rank));
  nccl_ = std::move(nccl);
  collective_ = std::move(collective);
  return Status::ok_status();
}

Result<CUdeviceptr> CudaDevice::scratch(Scratch& s, uint64_t bytes) {
  if (bytes <= s.bytes) return s.ptr;
  if (capturing_)  // cuMemAlloc would invalidate the capture
    return make_error(ErrorKind::kDevice, "tensor-parallel scratch of " + std::to_string(s.bytes) +
                                              " B is too small for " + std::to_string(bytes) +
                                              " B inside a graph capture");
  const uint64_t grown = std::max<uint64_t>(bytes, 2 * s.bytes);
  CUdeviceptr p = 0;
  const CUresult r = driver_->api().cuMemAlloc(&p, grown);
  if (r != CUDA_SUCCESS)
    return make_error(ErrorKind::kDevice, "cuMemAlloc(" + std::to_string(grown) + " B) for tensor-parallel scratch: " +
                                              driver_->describe(r));
  if (s.ptr) retired_.push_back(s.ptr);  // a captured graph may still read it
  s.ptr = p;
  s.bytes = grown;
  return p;
}

Status CudaDevice::tree_sum_into(CUdeviceptr base, uint64_t slot_bytes, size_t first, size_t count, uint64_t rows,
                                 uint64_t cols) {
  if (count <= 1) return Status::ok_status();
  const size_t left = (count + 1) / 2;  // tree_sum_f32's split
  KERN_RETURN_IF_ERROR(tree_sum_into(base, slot_bytes, first, left, rows, cols));
  KERN_RETURN_IF_ERROR(tree_sum_into(base, slot_bytes, first + left, count - left, rows, cols));
  const CUdeviceptr x = base + first * slot_bytes, y = base + (first + left) * slot_bytes;
  return cublaslt_->add_f32(stream_, x, y, x, rows, cols, false);
}

Status CudaDevice::tree_sum(CUdeviceptr base, uint64_t slot_bytes, size_t count, uint64_t rows, uint64_t cols,
                            CUdeviceptr out, bool out_bf16) {
  if (count == 1) return cublaslt_->add_f32(stream_, base, 0, out, rows, cols, out_bf16);
  const size_t left = (count + 1) / 2;
  KERN_RETURN_IF_ERROR(tree_sum_into(base, slot_bytes, 0, left, rows, cols));
  KERN_RETURN_IF_ERROR(tree_sum_into(base, slot_bytes, left, count - left, rows, cols));
  return cublaslt_->add_f32(stream_, base, base + left * slot_bytes, out, rows, cols, out_bf16);
}

Status CudaDevice::launch_splitk(uint32_t step, void** kernel_params, bool f32_out) {
  // params (common/extern_ops.h): a, w, c pointers, then i32 m, n, k, splits.
  std::array<uint64_t, 3> ptr{};
  std::array<int32_t, 4> dim{};
  for (size_t i = 0; i < ptr.size(); ++i) std::memcpy(&ptr[i], kernel_params[i], 8);
  for (size_t i = 0; i < dim.size(); ++i) std::memcpy(&dim[i], kernel_params[3 + i], 4);
  const int32_t m = dim[0], n = dim[1], k = dim[2], splits = dim[3];
  const std::string where = step_name(step, step_symbols_);
  if (m < 0 || n < 0 || k < 0)
    return make_error(ErrorKind::kDevice, where + ": m, n, k are " + std::to_string(m) + ", " + std::to_string(n) +
                                              ", " + std::to_string(k) + "; none may be negative");
  if (splits < 1 || splits > kMaxSplits || (splits & (splits - 1)) != 0)
    return make_error(ErrorKind::kDevice, where + ": param 6 (splits) is " + std::to_string(splits) +
                                              "; must be a power of two <= " + std::to_string(kMaxSplits));
  if (k % splits != 0)
    return make_error(ErrorKind::kDevice, where + ": param 5 (k) is " + std::to_string(k) +
                                              "; must be a multiple of splits " + std::to_string(splits));
  if (m == 0 || n == 0) return Status::ok_status();
  const uint64_t slot_bytes = uint64_t(m) * uint64_t(n) * 4;
  if (k == 0) return make_error(ErrorKind::kDevice, where + ": k is 0 (an empty split-K sum)");
  const int len = k / splits;
  // One alignment promise for every slice, whatever its offset: the GEMM of
  // slice s at TP = 1 and of the same slice on a rank at TP = N get the same
  // plan (and so the same summation order).
  const uint32_t align = std::min({gemm_pointer_alignment(ptr[0]), gemm_pointer_alignment(ptr[1]),
                                   gemm_pointer_alignment(uint64_t(len) * 2)});
  const uint64_t want = std::max<uint64_t>(uint64_t(m), kMinScratchRows) * uint64_t(n) * 4 * uint64_t(splits);
  KERN_ASSIGN_OR_RETURN(const CUdeviceptr base,
                        splitk_scratch_.bytes >= slot_bytes * uint64_t(splits) ? Result<CUdeviceptr>(splitk_scratch_.ptr)
                                                                               : scratch(splitk_scratch_, want),
                        where);
  for (int s = 0; s < splits; ++s)
    KERN_RETURN_IF_ERROR(cublaslt_->gemm_bf16_tn_slice_f32(stream_, ptr[0] + uint64_t(s) * len * 2,
                                                           ptr[1] + uint64_t(s) * len * 2, base + s * slot_bytes, m,
                                                           n, len, k, align),
                         where + " (k slice " + std::to_string(s) + ")");
  KERN_RETURN_IF_ERROR(tree_sum(base, slot_bytes, size_t(splits), uint64_t(m), uint64_t(n), ptr[2], !f32_out), where);
  return Status::ok_status();
}

Status CudaDevice::launch_allreduce(uint32_t step, void** kernel_params, bool bf16_out) {
  // params: x (f32, in place), [y (bf16 out),] i32 count.
  uint64_t x = 0, y = 0;
  int32_t count = 0;
  std::memcpy(&x, kernel_params[0], 8);
  if (bf16_out) std::memcpy(&y, kernel_params[1], 8);
  std::memcpy(&count, kernel_params[bf16_out ? 2 : 1], 4);
  const std::string where = step_name(step, step_symbols_);
  if (count < 0) return make_error(ErrorKind::kDevice, where + ": count is " + std::to_string(count));
  if (count == 0) return Status::ok_status();
  if (!nccl_ || !collective_)
    return make_error(ErrorKind::kDevice, where + ": this device belongs to no tensor-parallel world (run with --tp N)");
  const uint32_t world = collective_->world();
  const uint64_t slot_bytes = uint64_t(count) * 4;
  const uint64_t need = slot_bytes * world;
  KERN_ASSIGN_OR_RETURN(const CUdeviceptr gathered,
                        gather_scratch_.bytes >= need ? Result<CUdeviceptr>(gather_scratch_.ptr)
                                                      : scratch(gather_scratch_, std::max(need, kMinGatherBytes)),
                        where);
  KERN_RETURN_IF_ERROR(nccl_->all_gather_f32(x, gathered, uint64_t(count), stream_), where);
  KERN_RETURN_IF_ERROR(tree_sum(gathered, slot_bytes, world, 1, uint64_t(count), x, false), where);
  if (bf16_out) KERN_RETURN_IF_ERROR(cublaslt_->add_f32(stream_, x, 0, y, 1, uint64_t(count), true), where);
  return Status::ok_status();
}

}  // namespace kern::load::cuda
