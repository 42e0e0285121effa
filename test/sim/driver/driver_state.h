// The simulated CUDA driver's objects and their semantics (test/sim/driver):
// contexts (one primary context per device, current per thread), device and
// pinned host allocations, streams as ordered queues of work executed at
// synchronisation points, events on a synthetic clock, modules from real
// fatbins, stream capture into graphs, and the injectable failures. The
// entry points (driver_api.cpp) are thin checks over these.
//
// One process-wide mutex guards everything (the driver is thread-safe as
// CUDA's is); work runs on the thread that synchronises.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "test/sim/driver/cubin_image.h"
#include "test/sim/driver/kernel_source.h"

namespace kern::sim {

/// The simulated GPU: Hopper-like limits, compute capability 9.0.
inline constexpr int kSimArch = 90;
inline constexpr int kSimDriverVersion = 13000;
inline constexpr int kSharedPerBlock = 48 * 1024;       ///< default (non-opt-in) limit
inline constexpr int kSharedPerBlockOptin = 232448;     ///< H100/H200 opt-in limit
inline constexpr int kMaxThreadsPerBlock = 1024;

struct Context;
struct Module;

/// A CUfunction: an entry of a loaded module.
struct Function {
  Module* module = nullptr;
  CubinEntry entry;
  const EmulatedKernel* kernel = nullptr;  ///< null: the entry has no emulation (launch fails)
  int max_dynamic_shared = 0;              ///< CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};

/// A CUmodule.
struct Module {
  Context* ctx = nullptr;
  bool unloaded = false;  ///< kept allocated: queued work and graphs may still name its functions
  std::vector<std::unique_ptr<Function>> functions;
};

/// One unit of stream work; graph nodes are the same object, shared.
struct Work {
  enum class Kind { kKernel, kCopyHtoD, kCopyDtoH, kCopyDtoD, kMemset, kHost } kind = Kind::kKernel;
  std::string what;  ///< "cuLaunchKernel kern_x", for reports
  // kKernel: the function, geometry, and the parameter values copied at the call.
  Function* fn = nullptr;
  KernelLaunch launch;
  std::vector<uint8_t> param_bytes;
  // Copies and memset: destination, source, bytes, memset value.
  uint64_t dst = 0, src = 0, bytes = 0;
  uint8_t value = 0;
  bool host_pinned = false;            ///< the host side is cuMemHostAlloc memory
  std::vector<uint8_t> staged;         ///< pageable HtoD: the source copied at the call
  // kHost: work of the simulated cublasLt; returns "" or a violation.
  std::function<std::string()> host;
};

/// A CUevent.
struct Event {
  Context* ctx = nullptr;
  unsigned flags = 0;
  struct Stream* stream = nullptr;  ///< where it was last recorded (null: that stream is gone)
  bool recorded = false;            ///< cuEventRecord was called
  uint64_t seq = 0;                 ///< the queue position it waits for
  bool captured = false;            ///< last recorded into a capturing stream
  double time_us = 0;               ///< synthetic clock when it completed
  bool done = false;
};

/// One queued entry: a work item or an event record.
struct Pending {
  std::shared_ptr<const Work> work;  ///< null for an event record
  Event* event = nullptr;
  uint64_t seq = 0;
  uint64_t src_hash = 0;  ///< pinned HtoD: the source's hash at the call (race check)
  bool check_src = false;
};

/// A CUgraph / CUgraphExec: the captured work, in stream order.
struct Graph {
  Context* ctx = nullptr;
  std::vector<std::shared_ptr<const Work>> nodes;
};

/// A CUstream.
struct Stream {
  Context* ctx = nullptr;
  unsigned flags = 0;
  std::deque<Pending> queue;
  uint64_t next_seq = 1;  ///< seq of the next enqueued entry
  uint64_t done_seq = 0;  ///< every entry up to this one has executed
  // Capture state.
  bool capturing = false;
  bool capture_invalid = false;
  CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  uint64_t capture_thread = 0;
  std::unique_ptr<Graph> capture;
};

/// A context (only primary contexts exist here).
struct Context {
  int refcount = 0;  ///< primary context retains
  bool active = false;
  CUresult sticky = CUDA_SUCCESS;  ///< a kernel fault: every later call fails (as on a GPU)
  std::set<Stream*> streams;
  std::set<Event*> events;
  std::set<Module*> modules;
  std::set<Graph*> graphs, execs;
  Stream* null_stream = nullptr;  ///< the legacy default stream (CUstream 0), made on activation
};

/// Process-wide driver state (lock `mu` for any access).
struct DriverState {
  std::recursive_mutex mu;
  bool initialised = false;
  Context primary;
  std::map<uint64_t, uint64_t> device_allocs;  ///< base -> bytes
  std::map<uint64_t, uint64_t> host_allocs;    ///< pinned base -> bytes
  double clock_us = 0;                         ///< synthetic clock
  uint64_t launches = 0;                       ///< kernels executed (seeds)
  uint64_t seed = 0;                           ///< KERN_SIM_SEED
  std::set<Function*> functions;               ///< live CUfunctions
};

DriverState& state();
/// This thread's current context (cuCtxSetCurrent), or null.
Context*& current_context();
/// A number for this thread (capture ownership).
uint64_t this_thread_id();

/// Reports a violation found by the simulation: stderr and, when
/// KERN_SIM_REPORT names a file, appended there (tests assert it is empty).
void report(const std::string& what);

/// The pinned allocation holding [p, p + n), or false.
bool is_pinned(uint64_t p, uint64_t n);
/// Whether [p, p + n) lies inside one device allocation.
bool is_device(uint64_t p, uint64_t n);

/// Queues `work` on `s`, or records it into the stream's graph when it is
/// capturing (an invalidated capture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).
CUresult enqueue(Stream* s, std::shared_ptr<const Work> work);
/// Queues an event record (under capture: marks the event captured).
CUresult enqueue_record(Stream* s, Event* e);
/// Executes `s`'s queue up to and including `seq` (all of it for UINT64_MAX).
/// Returns the context's sticky error after any fault.
CUresult run_stream(Stream* s, uint64_t seq);
/// Executes every stream of `ctx` (cuCtxSynchronize, cuMemFree).
CUresult run_all(Context* ctx);

/// The injectable failures (KERN_SIM_FAIL=name[@n],...; n = which call,
/// 1-based, default 1): "launch" (cuLaunchKernel/Ex returns
/// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), "capture" (the first launch into a
/// capture invalidates it), "end_capture" (cuStreamEndCapture reports the
/// capture invalidated), "instantiate" (cuGraphInstantiateWithFlags fails),
/// "graph_launch" (cuGraphLaunch fails), "kernel_fault" (a kernel faults
/// when it executes: sticky CUDA_ERROR_ILLEGAL_ADDRESS), "alloc"
/// (cuMemAlloc returns CUDA_ERROR_OUT_OF_MEMORY). True when this call of
/// `name` is the one to fail.
bool inject(const char* name);

/// Whether the calling thread is inside a capture whose mode prohibits
/// potentially unsafe calls (cuMemAlloc, cuMemFree, ...): CUDA invalidates
/// that capture and fails the call with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
bool unsafe_call_in_capture();

}  // namespace kern::sim
