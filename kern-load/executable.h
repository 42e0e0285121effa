// A plan loaded onto a device and ready to replay (SPEC §6): owns the plan
// file, the device, every allocation (buffers at their maxima, states at the
// capacity, scratch), the bound weights and the staged launches of each
// program. The cold path (load) resolves every name and pointer; run_program
// only checks symbol values, patches symbol-dependent values and launches.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-load/device.h"
#include "kern-load/graph_policy.h"
#include "kern-load/launch_staging.h"
#include "kern-load/memory_plan.h"
#include "kern-load/plan_file.h"
#include "kern-load/safetensors.h"

namespace kern::load {

/// Wall time of each phase of Executable::load, in milliseconds
/// (std::chrono::steady_clock).
struct LoadTimings {
  double kernels_ms = 0;   ///< Device::load_kernels (cubin loading, ABI checks)
  double allocate_ms = 0;  ///< memory plan + allocations (arena, io buffers, states)
  double weights_ms = 0;   ///< bind_weights: weights viewed in place or allocated and copied
  double stage_ms = 0;     ///< staging every program's launches
  double pack_ms = 0;      ///< Device::prepare_weights (the cpu device packs its decode GEMVs' w)
  uint64_t weight_bytes = 0;  ///< bytes copied by bind_weights (or random weights written)
  uint64_t weight_bytes_in_place = 0;  ///< bytes the device reads straight from the mapped weights file
  uint64_t weight_bytes_packed = 0;  ///< bytes of the device's own layouts of weights (Device::prepare_weights)
};

/// How program runs went (SPEC §6 graphs); counts of run_program calls.
struct GraphStats {
  uint64_t eager_runs = 0;  ///< launched step by step
  uint64_t captures = 0;    ///< captured into a graph (then launched as the graph)
  uint64_t replays = 0;     ///< launched from an existing graph
  uint64_t fallbacks = 0;   ///< graph failures that fell back to eager (0 or 1)
};

/// Host<->device traffic of an Executable since load (kern-run's per-step
/// decode figures, docs/runtime.md "Asynchronous decode").
struct HostTraffic {
  uint64_t program_runs = 0;  ///< successful run_program calls
  uint64_t launches = 0;      ///< device launches issued: one per graph launch, one per eager step
  uint64_t host_writes = 0;   ///< write_input calls that copied bytes host -> device
  /// Blocking waits after which the device had no program run queued: it
  /// idles until the host issues more (read_buffer, synchronize, and
  /// wait_readback of a readback issued after the last run_program).
  uint64_t host_waits = 0;
  /// wait_readback calls with a later program run already queued behind the
  /// readback: the host waits, the device keeps working.
  uint64_t overlapped_waits = 0;
};

/// What kind of allocation a RegionRef names.
enum class RegionKind : uint8_t { kBuffer, kState, kScratch };

/// One region of an Executable's memory by plan index: Plan.buffers,
/// Plan.states or Plan.scratch (the cold-path debugging API:
/// Executable::read_region / write_region, `kern-run compare`).
struct RegionRef {
  RegionKind kind = RegionKind::kBuffer;
  uint32_t index = 0;
};

/// Load-time options.
struct ExecutableOptions {
  uint64_t capacity_tokens = 0;  ///< tokens of state to allocate (SPEC §6)
  std::string kernels_dir;       ///< where cubins live (the cuda device); may be empty for cpu
  /// Graphs (SPEC §6, graph_policy.h): false = always eager (`kern-run
  /// --eager`). A device without graphs (cpu) always runs eagerly.
  bool graphs = true;
  /// Eager runs of a (program, symbol values) key before it is captured.
  uint32_t graph_capture_after = 1;
  /// Captured graphs kept at most, and distinct (program, symbol values)
  /// keys counted at most (GraphPolicyOptions; docs/batching.md: a batched
  /// engine needs one graph per batch-size bucket beside prefill's and decode's).
  size_t max_graphs = 8;
  size_t max_tracked_keys = 64;
  /// Set: every weight buffer is filled with random_weights.h values of this
  /// seed (no file); `weights` must then be null.
  std::optional<uint64_t> random_weights_seed{};
  /// Debug (`kern-run --poison-workspace`): fill the workspace arena with
  /// 0xFF bytes (NaN in bf16, f16 and f32) at load and before every program
  /// run, so a kernel reading bytes no earlier launch of the run wrote sees
  /// NaN. Needs a device with fill_bytes (cpu), else load fails (kUsage).
  bool poison_workspace = false;
  /// Device::prepare_weights after staging: the cpu device packs its decode
  /// GEMVs' w into their lane order (kernels-src/cpu/gemv_packed.h; same
  /// bits, faster decode; the copy costs load time and memory: the weights
  /// the GEMVs read, once more). false (`kern-run --no-gemv-pack`): the
  /// GEMVs read the weights as stored.
  bool prepare_weights = true;
};

/// Everything Executable::load and the Executable report besides errors,
/// each through one member (kern-run: timings to its report, progress to its
/// progress line, warnings and notes to its log). Every member may be empty.
struct LoadMonitor {
  /// Out (borrowed, may be null): wall time of each load phase, filled by load.
  LoadTimings* timings = nullptr;
  /// Called after each weight tensor is copied to the device:
  /// (bytes copied so far, total weight bytes). For progress display only.
  std::function<void(uint64_t, uint64_t)> on_weight_progress;
  /// Warnings, for the Executable's whole life (it keeps a copy): a graph
  /// failure falling back to eager, a cleanup failure at destruction.
  std::function<void(const std::string&)> on_warning;
  /// Informational lines at load: each tensor of the weights file the plan
  /// does not use ("w.safetensors: tensor 'x' is not used by the plan").
  std::function<void(const std::string&)> on_note;
};

/// A loaded, runnable plan. Not copyable or movable (staged pointers refer to
/// its members); hold it by unique_ptr.
class Executable {
 public:
  /// Loads `plan` onto `device`: device->load_kernels, plan_memory at
  /// options.capacity_tokens, allocate (the workspace arena, io buffers and
  /// states, zero-filled by the device), bind_weights (copies) from
  /// `weights` (may be null when the plan has no weight buffers), stage every
  /// program. `monitor` (may be null) receives phase timings, weight-upload
  /// progress, notes and warnings. Errors name the failing stage and subject.
  static Result<std::unique_ptr<Executable>> load(PlanFile plan, std::unique_ptr<Device> device,
                                                  const Safetensors* weights, const ExecutableOptions& options,
                                                  const LoadMonitor* monitor = nullptr);
  /// As above, but the Executable takes the weights file and keeps it
  /// mapped: a device that reads host memory (cpu) uses every weight whose
  /// bytes are aligned to its element size in place, with no copy and no
  /// allocation (bind_weights `in_place`); the rest are copied.
  static Result<std::unique_ptr<Executable>> load(PlanFile plan, std::unique_ptr<Device> device, Safetensors weights,
                                                  const ExecutableOptions& options,
                                                  const LoadMonitor* monitor = nullptr);
  /// Calls close(); a failure goes to LoadMonitor::on_warning.
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  /// Destroys the captured graphs, frees every allocation this Executable
  /// made and closes the device (Device::close), joining every failure
  /// (iree_status_join's shape: the first leads, each later one follows
  /// "; then: "), with context "<plan>: releasing device resources".
  /// Idempotent. Afterwards run_program, the writes, reads and
  /// synchronize fail (kUsage) instead of touching released memory.
  Status close();

  /// Runs program `program` (index into Plan.programs) with `symbol_values`
  /// (indexed like Plan.symbols). Errors: wrong value count; a value outside
  /// its bounds ("symbol 'tokens' = 600 is outside its bounds [1, 512]");
  /// a launch whose grid/shared memory/expression overflows; a device launch
  /// failure, with context "program 'decode', dispatch 3 'label', step 'sym'".
  /// Launches are issued in order; on cpu they have run when this returns.
  /// With graphs on (ExecutableOptions::graphs) a repeated key is captured
  /// and replayed (graph_policy.h); a graph failure warns once through
  /// on_warning, turns graphs off and runs the program eagerly.
  Status run_program(uint32_t program, std::span<const uint64_t> symbol_values);

  /// Copies `bytes` into the start of buffer `buffer` (+ `offset_bytes`).
  /// Only `input` and `carry` buffers may be written. Errors: bad index,
  /// wrong class, offset + size beyond the buffer's max_size_bytes.
  Status write_input(uint32_t buffer, std::span<const uint8_t> bytes, uint64_t offset_bytes = 0);

  /// Copies the first `out.size()` bytes of buffer `buffer` to `out` (waits
  /// for prior launches). Errors: bad index, size beyond max_size_bytes.
  Status read_buffer(uint32_t buffer, std::span<uint8_t> out);

  /// Enqueues a copy of the first `bytes` bytes of buffer `buffer` into
  /// readback slot `slot` (< kReadbackSlots, device.h), ordered after every
  /// program run issued so far, without waiting (Device::read_async).
  /// Errors: bad index, `bytes` beyond the buffer's max_size_bytes or above
  /// kReadbackSlotBytes, a device failure.
  Status read_buffer_async(uint32_t buffer, uint32_t slot, uint64_t bytes);
  /// Waits for slot `slot`'s last read_buffer_async and returns the slot's
  /// bytes (valid until the next read_buffer_async into it). Counted in
  /// traffic() as a host wait when no program run was issued after that
  /// readback, else as an overlapped wait.
  Result<std::span<const uint8_t>> wait_readback(uint32_t slot);
  /// Waits for all issued work (Device::synchronize), counted as a host wait.
  Status synchronize();
  /// Host<->device traffic so far (launches, writes, waits).
  const HostTraffic& traffic() const { return traffic_; }

  // The cold-path debugging API (docs/compare.md): run part of a program and
  // read or write any region between the parts. Nothing here is used by
  // run_program's replay; each call checks its arguments and names what it
  // refuses.

  /// Runs launches [first, first + count) of program `program` (indices into
  /// its launch list, StagedProgram::launches; a dispatch may have several)
  /// eagerly, in order, with `symbol_values`: never captured into or
  /// replayed from a graph. With --poison-workspace the arena is poisoned
  /// when `first` is 0 (the start of a run). Counted in traffic().launches,
  /// not program_runs; last_symbol_values() becomes `symbol_values`.
  /// Errors (kUsage): closed; a bad program index; the range beyond the
  /// program's launches ("launches [3, 9) of program 'decode' (7 launches)");
  /// symbol values as run_program's. (kDevice) an overflowing launch value or
  /// a launch failure, with run_program's context.
  Status run_launches(uint32_t program, std::span<const uint64_t> symbol_values, uint32_t first, uint32_t count);

  /// Bytes allocated for region `r` (buffers at their maxima, states at the
  /// capacity; 0 when the region is empty). Errors (kUsage): a bad index.
  Result<uint64_t> region_size_bytes(RegionRef r) const;
  /// "buffer 'x'", "state 'kv_cache'" or "scratch 'tmp'" (a bad index: "region ?").
  std::string region_name(RegionRef r) const;
  /// Copies `out.size()` bytes from region `r` + `offset_bytes` to `out`
  /// after all issued work (Device::copy_to_host). Workspace buffers and
  /// scratch share the arena: their bytes are meaningful only while the
  /// region is live (read right after the launch that writes it). Errors
  /// (kUsage): closed; a bad index; offset + size beyond the region's
  /// region_size_bytes ("reading 64 B at offset 0 of state 'kv' of 32 B");
  /// the device's copy error.
  Status read_region(RegionRef r, uint64_t offset_bytes, std::span<uint8_t> out);
  /// Copies `bytes` into region `r` + `offset_bytes` (Device::copy_to_device),
  /// any class but weights (a weight may be the read-only mapped file).
  /// Errors (kUsage): closed; a bad index; a weight buffer; offset + size
  /// beyond the region; the device's copy error.
  Status write_region(RegionRef r, uint64_t offset_bytes, std::span<const uint8_t> bytes);

  /// Byte size of buffer `buffer` at `symbol_values` (its shape evaluated),
  /// <= its max_size_bytes for values within bounds.
  Result<uint64_t> buffer_size_bytes(uint32_t buffer, std::span<const uint64_t> symbol_values) const;

  /// Symbol values of the last successful run_program (empty before any).
  std::span<const uint64_t> last_symbol_values() const { return last_symbols_; }

  const PlanFile& plan_file() const { return plan_; }
  const plan::Plan& plan() const { return plan_.plan(); }
  Device& device() { return *device_; }
  const MemoryPlan& memory() const { return memory_; }
  const Addresses& addresses() const { return addr_; }
  /// Base of the workspace arena (0 when the arena is empty).
  DevicePtr arena() const { return arena_; }
  /// The staged launches of program `program` (tests and tools inspect them).
  const StagedProgram& staged(uint32_t program) const { return staged_[program]; }
  /// How runs were launched so far (eager, captured, replayed).
  const GraphStats& graph_stats() const { return graph_stats_; }
  /// Whether graphs may still be used (enabled, supported, no failure).
  bool graphs_active() const { return graphs_.active(); }

 private:
  Executable(PlanFile plan, std::unique_ptr<Device> device);
  /// Both load overloads: `weights` is borrowed or points at weights_.
  static Result<std::unique_ptr<Executable>> load_impl(std::unique_ptr<Executable> exe, const Safetensors* weights,
                                                       bool weights_in_place, const ExecutableOptions& options,
                                                       const LoadMonitor* monitor);
  /// kUsage once close() has run.
  Status check_open() const;
  /// Allocates the arena and every region outside it except weights.
  Status allocate_all();
  /// Allocates `size_bytes` for `what` and records it for freeing.
  Result<DevicePtr> allocate_owned(uint64_t size_bytes, uint64_t align_bytes, const std::string& what);
  /// --poison-workspace: fills the arena with 0xFF.
  Status poison_arena();
  /// Fills regions_: per program and param, the region its pointer was staged from.
  void stage_regions();
  /// "program 'P', dispatch D 'label', step 'S'": the context of a failed launch.
  std::string launch_context(uint32_t program, size_t launch) const;
  Status launch_eager(uint32_t program);
  /// Launches [first, end) of `program` (launch_eager's loop).
  Status launch_range(uint32_t program, size_t first, size_t end);
  /// kUsage when `symbol_values` do not match the plan's symbols or a value
  /// is outside its bounds.
  Status check_symbols(std::span<const uint64_t> symbol_values) const;
  /// Region `r`'s address and size, or a kUsage error naming the bad index.
  Result<std::pair<DevicePtr, uint64_t>> region_extent(RegionRef r) const;
  /// Captures program `program` at `symbol_values` and launches the graph.
  Status capture_and_launch(uint32_t program, std::span<const uint64_t> symbol_values);
  /// A graph step failed: warn once, turn graphs off.
  void graph_failed(uint32_t program, const std::string& what, const Error& e);

  PlanFile plan_;
  std::unique_ptr<Device> device_;
  std::optional<Safetensors> weights_;  ///< kept mapped: weights used in place point into it
  MemoryPlan memory_;
  Addresses addr_;                     ///< every region's address (0 = none)
  DevicePtr arena_ = 0;                ///< base of the workspace arena (0 = empty)
  std::vector<DevicePtr> owned_;       ///< what this Executable allocated and frees
  bool poison_ = false;                ///< ExecutableOptions::poison_workspace
  std::vector<StagedProgram> staged_;  ///< by program index
  /// By program, by param slot (like StagedProgram::param_ptrs): the region a
  /// pointer param points into, for the device's extent checks (Device::launch_in_regions).
  std::vector<std::vector<ParamRegion>> regions_;
  std::vector<std::string> region_names_;  ///< "buffer 'x'" ... by buffer, then state, then scratch
  std::vector<uint64_t> last_symbols_;
  GraphPolicy graphs_;
  GraphStats graph_stats_;
  HostTraffic traffic_;
  /// traffic_.program_runs when each readback slot's copy was issued.
  std::array<uint64_t, kReadbackSlots> readback_after_run_{};
  std::function<void(const std::string&)> on_warning_;
  bool closed_ = false;  ///< close() has run
};

}  // namespace kern::load
