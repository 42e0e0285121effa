// The cuda device (SPEC §6, §10; device.h): the driver loaded with dlopen
// (cuda_driver.h), device `ordinal`'s primary context, one non-blocking
// stream (never the legacy NULL stream, so programs can be captured into
// graphs later), kernel files loaded with cuModuleLoadData after their
// sha256 pin is checked, each step resolved and its param ABI checked with
// cuFuncGetParamInfo (cuda_abi.h), the extern GEMMs through cublasLt
// (cublaslt.h), host<->device copies through pinned staging.
//
// Trust boundary: a kernel that matches its declared ABI is trusted to stay
// within the bounds its params describe (SPEC §1); compute-sanitizer is the
// debugging fallback.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/extern_ops.h"
#include "kern-load/cuda/cublaslt.h"
#include "kern-load/cuda/cuda_abi.h"
#include "kern-load/cuda/cuda_driver.h"
#include "kern-load/cuda/cuda_launch.h"
#include "kern-load/cuda/nccl.h"
#include "kern-load/device.h"
#include "kern-load/device_precheck.h"

namespace kern::load::cuda {

/// The cuda Device. Created by make_cuda_device (device.h).
class CudaDevice final : public Device {
 public:
  /// Loads the driver, retains the primary context of `options.ordinal`,
  /// creates the stream and pinned staging. Errors (kDevice): no driver, no
  /// such device, any failing driver call (named).
  static Result<std::unique_ptr<CudaDevice>> create(const CudaDeviceOptions& options);
  /// Calls close(), dropping its failures (nowhere to report them).
  ~CudaDevice() override;
  /// Ends a capture, waits for the stream, destroys the graphs, cublasLt,
  /// every allocation, module, pinned buffer, event and the stream, and
  /// releases the primary context, each tried whatever failed before it;
  /// the failures joined (StatusJoin), each naming its driver call.
  Status close() override;

  std::string name() const override { return name_; }
  Result<DevicePtr> allocate(uint64_t size_bytes, uint64_t align_bytes) override;
  Status free(DevicePtr ptr) override;
  Status copy_to_device(DevicePtr dst, const void* src, uint64_t size_bytes) override;
  Status copy_to_host(void* dst, DevicePtr src, uint64_t size_bytes) override;
  Status load_kernels(const PlanFile& plan, const std::string& kernels_dir) override;
  Status launch(uint32_t step, const LaunchDims& dims, void** kernel_params) override;
  Status synchronize() override;

  /// Readback slots: one pinned buffer of kReadbackSlots x kReadbackSlotBytes
  /// and one event per slot (cuMemcpyDtoHAsync + cuEventRecord; wait_read:
  /// cuEventSynchronize, which spins or yields per the context's scheduling
  /// flags, never a stream synchronize).
  Status read_async(uint32_t slot, DevicePtr src, uint64_t size_bytes) override;
  Result<std::span<const uint8_t>> wait_read(uint32_t slot) override;

  /// Timing marks: kTimingMarks events with timing enabled.
  bool supports_timing() const override { return true; }
  Status record_mark(uint32_t mark) override;
  Result<double> mark_elapsed_ms(uint32_t from, uint32_t to) override;

  /// Graphs: stream capture in thread-local mode on the device's stream.
  bool supports_graphs() const override { return true; }
  Status begin_capture() override;
  Result<GraphHandle> end_capture() override;
  Status abort_capture() override;
  Status launch_graph(GraphHandle graph) override;
  Status destroy_graph(GraphHandle graph) override;

  /// Tensor parallelism (docs/parallel.md "On GPUs"): keeps `collective`
  /// (the ranks' Gloo rendezvous) and over it joins an NCCL communicator:
  /// rank 0's ncclGetUniqueId all-gathered, ncclCommInitRank on this
  /// device. Errors (kDevice): NCCL missing or too old (nccl.h), the
  /// exchange or ncclCommInitRank failed.
  Status attach_collective(std::unique_ptr<cpu::Collective> collective) override;
  /// The Gloo endpoint kept by attach_collective (serve --tp's step orders
  /// travel over it, kern-run/serve/tp_orders.h); null on one rank.
  cpu::Collective* collective() override { return collective_.get(); }

  /// The device's limits for the precheck (cuDeviceGetAttribute, cuDriverGetVersion).
  Result<DeviceLimits> limits() const;

 private:
  /// A step resolved by load_kernels.
  struct StepFn {
    CUfunction fn = nullptr;       ///< null for extern steps
    ExternOpId op = ExternOpId::kNone;  ///< the built-in (common/extern_ops.h) for extern steps
    /// The function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as last
    /// read or set, shared by every step launching the same CUfunction (the
    /// attribute belongs to the function): points into fn_max_dynamic_smem_.
    uint32_t* max_dynamic_smem = nullptr;
    bool pdl = false;  ///< launch with PDL: the step's "pdl" flag on a device with cc >= 9.0
  };
  /// A loaded kernel file.
  struct Module {
    std::string file;  ///< name relative to the kernels dir
    CUmodule module = nullptr;
  };
  static constexpr uint64_t kStagingBytes = 8ull << 20;    ///< per pinned staging buffer (two)
  /// Host->device copies of at most this many bytes go through a ring of
  /// small pinned slots instead, so that a run of small input writes (a
  /// prefill chunk's, the first decode's) never waits for the device: a slot
  /// is reused only kSmallSlots copies later.
  static constexpr uint64_t kSmallCopyBytes = 4096;
  static constexpr int kSmallSlots = 64;
  static constexpr uint64_t kWorkspaceBytes = 32ull << 20;  ///< cublasLt workspace

  CudaDevice() = default;
  /// Checks `bytes`, the contents of `file` under `dir` (read by
  /// read_kernel_file), against every pin in `sha256s` (32-byte digests;
  /// none = unpinned) and loads them as `out`.
  Status load_module(const std::string& dir, const std::string& file, std::string_view bytes,
                     const std::vector<const uint8_t*>& sha256s, Module& out);
  /// load_kernels, extern step `i`: its built-in and exact ABI (common/extern_ops.h);
  /// loads cublasLt on first use.
  Status bind_extern_step(const plan::Plan& p, uint32_t i);
  /// load_kernels, kernel step `i`: its CUfunction in the loaded modules (only
  /// its pinned file when it pins one), the instance whose parameter layout
  /// matches the step's params, its shared memory attributes, and PDL on a
  /// device of `cc_major` >= 9 unless CudaDeviceOptions::pdl is off.
  Status bind_kernel_step(const plan::Plan& p, uint32_t i, const std::vector<size_t>& module_of_pin, int cc_major);
  Status launch_error(uint32_t step, const char* call, CUresult r) const;
  /// A device buffer that only grows (cuda_collective.cpp): a graph captured
  /// earlier may still name an older one, so those are kept until close().
  struct Scratch {
    CUdeviceptr ptr = 0;
    uint64_t bytes = 0;
  };
  /// `s`, grown to at least `bytes` (a new cuMemAlloc, the old kept in retired_).
  Result<CUdeviceptr> scratch(Scratch& s, uint64_t bytes);
  /// out = the pairwise tree (tree_sum_f32's order, kernels-src/cpu) over
  /// `count` dense f32 [rows, cols] matrices at base + i * slot_bytes,
  /// rounded once to f32 or to bf16 (`out_bf16`). Overwrites the slots.
  Status tree_sum(CUdeviceptr base, uint64_t slot_bytes, size_t count, uint64_t rows, uint64_t cols, CUdeviceptr out,
                  bool out_bf16);
  /// Recursion of tree_sum: the sum of slots [first, first + count) left in slot `first`.
  Status tree_sum_into(CUdeviceptr base, uint64_t slot_bytes, size_t first, size_t count, uint64_t rows,
                       uint64_t cols);
  /// extern:gemm_bf16_tn_splitk[_f32]: each k slice through cublasLt, the slices' tree.
  Status launch_splitk(uint32_t step, void** kernel_params, bool f32_out);
  /// extern:allreduce_sum_f32[_bf16]: ncclAllGather, then the tree over the ranks.
  Status launch_allreduce(uint32_t step, void** kernel_params, bool bf16_out);
  /// Makes the device's context current on the calling thread, once per
  /// thread (CUDA keeps the current context per thread: without this a call
  /// from a thread other than the creator's fails with
  /// CUDA_ERROR_INVALID_CONTEXT). Every public entry point calls it first.
  Status bind_thread() const;

  std::unique_ptr<Driver> driver_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;  ///< retained primary context
  CUstream stream_ = nullptr;
  void* staging_[2] = {nullptr, nullptr};  ///< pinned host buffers (cuMemHostAlloc)
  CUevent staging_done_[2] = {nullptr, nullptr};  ///< recorded after each copy out of staging_[i]
  int next_staging_ = 0;
  void* small_ = nullptr;                  ///< pinned, kSmallSlots x kSmallCopyBytes
  CUevent small_done_[kSmallSlots] = {};   ///< recorded after each copy out of a small slot
  int next_small_ = 0;
  void* readback_ = nullptr;               ///< pinned, kReadbackSlots x kReadbackSlotBytes
  CUevent readback_done_[kReadbackSlots] = {};  ///< recorded after each read_async
  CUevent marks_[kTimingMarks] = {};       ///< timing events (record_mark)
  std::unordered_map<DevicePtr, CUdeviceptr> allocations_;  ///< aligned address -> cuMemAlloc base
  std::vector<Module> modules_;
  std::vector<StepFn> steps_;
  /// Per CUfunction: its max dynamic shared memory attribute (StepFn::max_dynamic_smem
  /// points here; unordered_map nodes do not move).
  std::unordered_map<CUfunction, uint32_t> fn_max_dynamic_smem_;
  /// Per CUfunction: CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES; per step: its function's (0 for extern steps).
  std::unordered_map<CUfunction, uint64_t> fn_static_smem_;
  std::vector<uint64_t> step_static_smem_;
  std::vector<std::string> step_symbols_;  ///< for error messages (cold path)
  CUdeviceptr workspace_ = 0;
  std::unique_ptr<CublasLt> cublaslt_;
  std::vector<CUgraphExec> graphs_;  ///< instantiated graphs (destroyed with the device)
  std::unique_ptr<cpu::Collective> collective_;  ///< the ranks' rendezvous (Gloo); null on one rank
  std::unique_ptr<NcclComm> nccl_;               ///< this rank's communicator; null on one rank
  Scratch splitk_scratch_;                       ///< the split-K slices' f32 partials
  Scratch gather_scratch_;                       ///< the all-reduce's all-gathered partials
  std::vector<CUdeviceptr> retired_;             ///< outgrown scratch buffers, freed at close()
  bool capturing_ = false;
  bool pdl_ = true;  ///< CudaDeviceOptions::pdl
  bool closed_ = false;  ///< close() has run
  std::string name_;
};

}  // namespace kern::load::cuda
