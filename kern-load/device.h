// The device interface kern-load runs plans on (SPEC §6, §10): the cpu
// reference device (cpu_device.h) and the cuda device (kern-load/cuda/,
// driver API loaded with dlopen) implement it. Deliberately small: memory,
// copies, kernel resolution, one launch, synchronize. Everything
// plan-specific (sizes, argument staging, symbol checks) lives in Executable.
//
// Threading: a Device is used from one thread at a time.
// Ordering: launches and copies execute in issue order; copy_to_host returns
// after the copy and all previously issued launches completed; read_async
// enqueues a copy in that order and returns at once (wait_read waits).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-load/graph_policy.h"
#include "kern-load/plan_file.h"
#include "kernels-src/cpu/collective.h"

namespace kern::load {

/// A device address (CUdeviceptr on cuda, a host address on cpu); 0 = null.
using DevicePtr = uint64_t;

struct StagedProgram;  // launch_staging.h

/// A weight buffer's device memory: [start, start + size_bytes).
struct WeightRange {
  DevicePtr start = 0;
  uint64_t size_bytes = 0;
};

/// Launch geometry of one step (cuLaunchKernel's gridDim/blockDim/sharedMemBytes).
struct LaunchDims {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_mem_bytes = 0;  ///< dynamic shared memory in bytes
};

/// Asynchronous readback slots per device (read_async / wait_read).
inline constexpr uint32_t kReadbackSlots = 16;
/// Bytes one readback slot holds.
inline constexpr uint64_t kReadbackSlotBytes = 256;
/// GPU timestamp marks per device (record_mark / mark_elapsed_ms).
inline constexpr uint32_t kTimingMarks = 64;
/// What one pointer param of a launch was staged from: the bytes from
/// `offset` to `size_bytes` of the region `name` ("scratch 'tmp'"). Regions
/// inside the workspace arena share one allocation, so a device that checks
/// extents needs this to bound a pointer by its own region.
struct ParamRegion {
  uint64_t offset = 0;
  uint64_t size_bytes = 0;             ///< 0: not a pointer param (or unknown)
  const std::string* name = nullptr;   ///< borrowed; outlives the launch
};

/// One execution device. Implementations report failures as Error values of
/// kind kDevice (driver calls: name the call and the CUDA error string) or
/// kKernel (kernel resolution: name the step symbol).
class Device {
 public:
  /// Destruction releases what close() would, dropping its failures
  /// (a destructor cannot report them): call close() first to see them.
  virtual ~Device() = default;

  /// Releases every resource the device holds (allocations, kernel modules,
  /// streams, events, its context), joining every failure into the returned
  /// Status (common/result.h join: the first leads). Idempotent; the device
  /// must not be used afterwards. Executable::close() calls it.
  virtual Status close() { return {}; }

  /// Short human name for logs and kern-run's report ("cpu", "cuda:0 NVIDIA H200").
  virtual std::string name() const = 0;

  /// Allocates `size_bytes` (> 0) of device memory aligned to `align_bytes`
  /// (a power of two >= 256), zero-filled. cuda: cuMemAlloc + cuMemsetD8.
  virtual Result<DevicePtr> allocate(uint64_t size_bytes, uint64_t align_bytes) = 0;
  /// Frees memory returned by allocate (cuMemFree). Freeing 0 is a no-op.
  virtual Status free(DevicePtr ptr) = 0;
  /// Names an allocation returned by allocate ("buffer 'x'") for the
  /// device's own diagnostics; the cpu device names it in extent errors.
  /// Default: ignored.
  virtual void name_allocation(DevicePtr /*ptr*/, const std::string& /*name*/) {}

  /// Copies `size_bytes` from host memory `src` to device address `dst`
  /// (cuMemcpyHtoD, through pinned staging on cuda).
  virtual Status copy_to_device(DevicePtr dst, const void* src, uint64_t size_bytes) = 0;
  /// A device address that reads the host memory [host, host + size_bytes)
  /// in place, without a copy, or nullopt when the device cannot (the
  /// default; cuda) or `host` is not aligned to `align_bytes`. The caller
  /// keeps the host memory alive and unchanged while the device uses it, and
  /// never frees the address. Used to bind weights from the mapped file.
  virtual std::optional<DevicePtr> host_view(const void* /*host*/, uint64_t /*size_bytes*/,
                                             uint64_t /*align_bytes*/) {
    return std::nullopt;
  }
  /// Sets `size_bytes` at `dst` to `value` (the --poison-workspace debug
  /// mode). Default: an error (kUsage) saying the device cannot.
  virtual Status fill_bytes(DevicePtr /*dst*/, uint8_t /*value*/, uint64_t /*size_bytes*/) {
    return make_error(ErrorKind::kUsage, "the " + name() + " device cannot fill memory (poisoning is cpu only)");
  }

  /// Copies `size_bytes` from device address `src` to host memory `dst`
  /// after all previously issued launches completed (cuMemcpyDtoH).
  virtual Status copy_to_host(void* dst, DevicePtr src, uint64_t size_bytes) = 0;

  /// Resolves every step of `plan` (Plan.steps, by index) to something
  /// launch() can run. cpu: each step symbol (or `extern:` op) through the
  /// reference kernel registry; a symbol without one is an error naming it.
  /// cuda: loads the cubins under `kernels_dir`, checks pinned sha256s and
  /// param ABIs (SPEC §6). `plan` outlives the device's use of it.
  virtual Status load_kernels(const PlanFile& plan, const std::string& kernels_dir) = 0;

  /// Launches step `step` (an index into Plan.steps, resolved by
  /// load_kernels) with `kernel_params`: one pointer per step param, each
  /// pointing at the value (the cuLaunchKernel kernelParams layout,
  /// docs/kernels.md). The pointed-to values may be overwritten once launch
  /// returns. cpu: runs the kernel to completion; cuda: enqueues it.
  virtual Status launch(uint32_t step, const LaunchDims& dims, void** kernel_params) = 0;

  /// launch() with, per param, the region its pointer was staged from
  /// (`regions`, one per param). The default ignores them; the cpu device
  /// bounds each pointer by its region (workspace buffers and scratch share
  /// the arena allocation).
  virtual Status launch_in_regions(uint32_t step, const LaunchDims& dims, void** kernel_params,
                                   const ParamRegion* /*regions*/) {
    return launch(step, dims, kernel_params);
  }

  /// Lets the device make its own layouts of weights for the launches it
  /// will run (the cpu device packs the decode GEMVs' w into the lane order,
  /// kernels-src/cpu/gemv_packed.h): called once by Executable::load after
  /// every program is staged, with the weight buffers (whose contents no
  /// launch changes). Returns the bytes it allocated for them (the default:
  /// none, 0). Errors: the device's allocation failures.
  virtual Result<uint64_t> prepare_weights(const std::vector<StagedProgram>& /*programs*/,
                                           std::span<const WeightRange> /*weights*/) {
    return uint64_t{0};
  }

  /// Waits for all issued work (cuStreamSynchronize).
  virtual Status synchronize() = 0;

  // Asynchronous readback (kern-run's decode loop reads each step's token
  // while later steps are already queued). A slot is a small pinned host
  // buffer with a completion event; slots are independent.

  /// Enqueues a copy of `size_bytes` (<= kReadbackSlotBytes) from device
  /// address `src` into readback slot `slot` (< kReadbackSlots), ordered
  /// after all previously issued work, and returns without waiting. The
  /// slot's previous contents are lost. cuda: cuMemcpyDtoHAsync into pinned
  /// memory + cuEventRecord. This default copies synchronously through
  /// copy_to_host, which is exact for a device that runs launches to
  /// completion (the cpu device).
  virtual Status read_async(uint32_t slot, DevicePtr src, uint64_t size_bytes) {
    KERN_RETURN_IF_ERROR(check_readback(slot, size_bytes));
    return copy_to_host(readback_[slot].data(), src, size_bytes);
  }
  /// Waits until slot `slot`'s last read_async has landed and returns the
  /// slot's bytes (kReadbackSlotBytes; the copied prefix is valid until the
  /// next read_async into the slot). cuda: cuEventSynchronize.
  virtual Result<std::span<const uint8_t>> wait_read(uint32_t slot) {
    KERN_RETURN_IF_ERROR(check_readback(slot, 0));
    return std::span<const uint8_t>(readback_[slot]);
  }

  // GPU timestamps (optional; cuda events with timing). kern-run measures
  // the GPU busy time of each decode step and the idle gap between steps.

  /// Whether record_mark / mark_elapsed_ms are supported (cpu: no).
  virtual bool supports_timing() const { return false; }
  /// Enqueues timestamp `mark` (< kTimingMarks), replacing its previous one.
  virtual Status record_mark(uint32_t /*mark*/) { return make_error(ErrorKind::kDevice, name() + " has no timers"); }
  /// Milliseconds between two recorded marks on the device's clock; waits
  /// for `to` to complete (cuEventSynchronize + cuEventElapsedTime).
  virtual Result<double> mark_elapsed_ms(uint32_t /*from*/, uint32_t /*to*/) {
    return make_error(ErrorKind::kDevice, name() + " has no timers");
  }

  // Graphs (SPEC §6): optional; the cpu device has none and Executable then
  // always launches eagerly. While capturing, launch() records instead of
  // running; nothing else (copies, allocation) may be issued.

  /// Whether begin_capture / end_capture / launch_graph are supported.
  virtual bool supports_graphs() const { return false; }
  /// Starts recording launches (cuda: cuStreamBeginCapture, thread-local mode).
  virtual Status begin_capture() { return make_error(ErrorKind::kDevice, name() + " has no graphs"); }
  /// Stops recording and instantiates the graph (cuStreamEndCapture +
  /// cuGraphInstantiate). After an error the device is out of capture mode.
  virtual Result<GraphHandle> end_capture() { return make_error(ErrorKind::kDevice, name() + " has no graphs"); }
  /// Ends a capture whose launches failed, discarding it. The device is out
  /// of capture mode afterwards either way; an error says what could not be
  /// ended or destroyed (the caller joins it to the launch failure).
  virtual Status abort_capture() { return {}; }
  /// Enqueues a graph returned by end_capture (cuGraphLaunch).
  virtual Status launch_graph(GraphHandle /*graph*/) {
    return make_error(ErrorKind::kDevice, name() + " has no graphs");
  }
  /// Destroys a graph returned by end_capture (after pending work); 0 is a
  /// no-op. Errors: the wait or the destroy failed (kDevice, naming the call).
  virtual Status destroy_graph(GraphHandle /*graph*/) { return {}; }

  // Tensor parallelism (docs/parallel.md): a device of one rank of a world
  // runs the plan's collective extern ops through this endpoint.

  /// Takes this rank's endpoint (owned) before load_kernels. Devices without
  /// collectives refuse (kDevice); the cpu device runs them over Gloo.
  virtual Status attach_collective(std::unique_ptr<cpu::Collective> /*collective*/) {
    return make_error(ErrorKind::kDevice, "tensor parallelism on the " + name() +
                                              " device is not built yet (the cpu device has it, over Gloo)");
  }
  /// The attached endpoint's totals; none without one.
  virtual std::optional<cpu::CollectiveStats> collective_stats() const { return std::nullopt; }
  /// The attached endpoint (owned by the device), for callers that must
  /// exchange more than the plan's collectives on the same transport (serve's
  /// step orders, kern-run/serve/tp_orders.h); null without one.
  virtual cpu::Collective* collective() { return nullptr; }

 protected:
  /// A kDevice error for a slot index >= kReadbackSlots or a size above
  /// kReadbackSlotBytes; OK otherwise.
  static Status check_readback(uint32_t slot, uint64_t size_bytes) {
    if (slot >= kReadbackSlots)
      return make_error(ErrorKind::kDevice, "readback slot " + std::to_string(slot) + " is not below " +
                                                std::to_string(kReadbackSlots));
    if (size_bytes > kReadbackSlotBytes)
      return make_error(ErrorKind::kDevice, "readback of " + std::to_string(size_bytes) + " B exceeds a slot's " +
                                                std::to_string(kReadbackSlotBytes) + " B");
    return {};
  }

 private:
  /// Host slots of the synchronous default read_async (unused by cuda).
  std::array<std::array<uint8_t, kReadbackSlotBytes>, kReadbackSlots> readback_{};
};

/// Options of the cuda device.
struct CudaDeviceOptions {
  int ordinal = 0;  ///< CUDA device ordinal
  /// Programmatic dependent launch for the steps that ask for it ("pdl":
  /// true, docs/gpu.md). false (kern-run --no-pdl) launches them plainly,
  /// each after the previous launch completes: a run that tells a PDL race
  /// from a kernel bug.
  bool pdl = true;
};

/// Creates the cuda device. Defined by kern-load/cuda/ when that backend is
/// built; otherwise by kern-load/cuda_device_missing.cpp, which returns an
/// error (kind kDevice) saying the cuda device is not built.
Result<std::unique_ptr<Device>> make_cuda_device(const CudaDeviceOptions& options);

}  // namespace kern::load
