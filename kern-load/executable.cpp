// A plan loaded onto a device and replayed (executable.h).
#include "kern-load/executable.h"

#include <chrono>

#include "common/expr.h"
#include "common/terminal_text.h"
#include "kern-load/plan_expr.h"
#include "kern-load/random_weights.h"
#include "kern-load/weight_binding.h"

namespace kern::load {

Executable::Executable(PlanFile plan, std::unique_ptr<Device> device)
    : plan_(std::move(plan)), device_(std::move(device)) {}

Executable::~Executable() {
  // A destructor cannot fail: what close() could not release is a warning.
  Status s = close();
  if (!s.ok() && on_warning_) on_warning_(s.error().message);
}

Status Executable::close() {
  if (closed_) return {};
  closed_ = true;
  StatusJoin failures;  // each release is tried whatever failed before it
  for (const CapturedGraph& g : graphs_.take_graphs()) failures.add(device_->destroy_graph(g.handle));
  for (DevicePtr ptr : owned_) failures.add(device_->free(ptr));
  owned_.clear();
  failures.add(device_->close());
  KERN_RETURN_IF_ERROR(failures.status(), plan_.path() + ": releasing device resources");
  return {};
}

Status Executable::check_open() const {
  if (closed_) [[unlikely]]
    return make_error(ErrorKind::kUsage, plan_.path() + ": the executable was closed; its device memory is released");
  return {};
}

Result<std::unique_ptr<Executable>> Executable::load(PlanFile plan, std::unique_ptr<Device> device,
                                                     const Safetensors* weights, const ExecutableOptions& options,
                                                     const LoadMonitor* monitor) {
  std::unique_ptr<Executable> exe(new Executable(std::move(plan), std::move(device)));
  return load_impl(std::move(exe), weights, false, options, monitor);
}

Result<std::unique_ptr<Executable>> Executable::load(PlanFile plan, std::unique_ptr<Device> device,
                                                     Safetensors weights, const ExecutableOptions& options,
                                                     const LoadMonitor* monitor) {
  std::unique_ptr<Executable> exe(new Executable(std::move(plan), std::move(device)));
  exe->weights_ = std::move(weights);  // tensors' spans stay valid: the mapping does not move
  const Safetensors* w = &*exe->weights_;
  return load_impl(std::move(exe), w, true, options, monitor);
}

Result<std::unique_ptr<Executable>> Executable::load_impl(std::unique_ptr<Executable> exe, const Safetensors* weights,
                                                          bool weights_in_place, const ExecutableOptions& options,
                                                          const LoadMonitor* monitor) {
  const plan::Plan& p = exe->plan();
  const std::string& path = exe->plan_.path();
  // Check the weights before anything is allocated: the cheapest and most
  // common failure names the weight, not a device.
  const bool random_weights = options.random_weights_seed.has_value();
  if (random_weights && weights != nullptr)
    return make_error(ErrorKind::kUsage, "random weights and a weights file were both given");
  if (!random_weights) KERN_RETURN_IF_ERROR(check_weights(p, weights));
  GraphPolicyOptions gpo;
  gpo.enabled = options.graphs && exe->device_->supports_graphs();
  gpo.capture_after = options.graph_capture_after;
  gpo.max_graphs = options.max_graphs;
  gpo.max_tracked_keys = options.max_tracked_keys;
  exe->graphs_ = GraphPolicy(gpo);
  if (monitor != nullptr) exe->on_warning_ = monitor->on_warning;
  exe->poison_ = options.poison_workspace;
  using Clock = std::chrono::steady_clock;
  LoadTimings timings;
  auto t0 = Clock::now();
  auto lap = [&t0](double& ms) {
    auto now = Clock::now();
    ms = std::chrono::duration<double, std::milli>(now - t0).count();
    t0 = now;
  };
  KERN_RETURN_IF_ERROR(exe->device_->load_kernels(exe->plan_, options.kernels_dir), path + ": loading kernels");
  lap(timings.kernels_ms);
  KERN_ASSIGN_OR_RETURN(auto memory, plan_memory(p, options.capacity_tokens), path);
  exe->memory_ = std::move(memory);
  KERN_RETURN_IF_ERROR(exe->allocate_all());
  if (exe->poison_) {
    KERN_RETURN_IF_ERROR(exe->poison_arena(), "--poison-workspace");
  }
  lap(timings.allocate_ms);
  const auto* progress =
      monitor != nullptr && monitor->on_weight_progress ? &monitor->on_weight_progress : nullptr;
  Executable* self = exe.get();
  WeightAllocator allocate = [self, &p](uint32_t buffer, uint64_t size_bytes) {
    return self->allocate_owned(size_bytes, kMinAllocAlign, "buffer '" + p.buffers()->Get(buffer)->name()->str() + "'");
  };
  if (random_weights) {
    for (uint32_t i = 0; i < p.buffers()->size(); ++i) {
      if (p.buffers()->Get(i)->class_() != plan::BufferClass::weight || exe->memory_.buffers[i].size_bytes == 0)
        continue;
      KERN_ASSIGN_OR_RETURN(auto ptr, allocate(i, exe->memory_.buffers[i].size_bytes));
      exe->addr_.buffers[i] = ptr;
    }
    KERN_ASSIGN_OR_RETURN(auto written, fill_random_weights(p, *options.random_weights_seed, *exe->device_,
                                                            exe->addr_.buffers, progress));
    lap(timings.weights_ms);
    timings.weight_bytes = written;
  } else {
    KERN_ASSIGN_OR_RETURN(
        auto bound, bind_weights(p, weights, *exe->device_, exe->addr_.buffers, progress, weights_in_place, &allocate));
    lap(timings.weights_ms);
    timings.weight_bytes = bound.bytes_copied;
    timings.weight_bytes_in_place = bound.bytes_in_place;
    if (bound.bytes_in_place > 0)  // name the views too, for the cpu device's extent errors
      for (uint32_t i = 0; i < p.buffers()->size(); ++i)
        if (p.buffers()->Get(i)->class_() == plan::BufferClass::weight && exe->addr_.buffers[i] != 0)
          exe->device_->name_allocation(exe->addr_.buffers[i], "buffer '" + p.buffers()->Get(i)->name()->str() + "'");
    if (monitor != nullptr && monitor->on_note)
      for (const auto& name : bound.unused_tensors)
        monitor->on_note(weights->path() + ": tensor '" + terminal_safe(name) + "' is not used by the plan");
  }
  for (uint32_t i = 0; i < p.programs()->size(); ++i) exe->staged_.push_back(stage_program(p, i, exe->addr_));
  exe->stage_regions();
  lap(timings.stage_ms);
  std::vector<WeightRange> weight_ranges;
  for (uint32_t i = 0; i < p.buffers()->size(); ++i)
    if (p.buffers()->Get(i)->class_() == plan::BufferClass::weight && exe->addr_.buffers[i] != 0)
      weight_ranges.push_back({exe->addr_.buffers[i], exe->memory_.buffers[i].size_bytes});
  if (options.prepare_weights) {
    KERN_ASSIGN_OR_RETURN(timings.weight_bytes_packed, exe->device_->prepare_weights(exe->staged_, weight_ranges),
                          path + ": preparing the weights' device layouts");
  }
  lap(timings.pack_ms);
  if (monitor != nullptr && monitor->timings != nullptr) *monitor->timings = timings;
  return exe;
}

Result<DevicePtr> Executable::allocate_owned(uint64_t size_bytes, uint64_t align_bytes, const std::string& what) {
  KERN_ASSIGN_OR_RETURN(auto ptr, device_->allocate(size_bytes, align_bytes),
                        "allocating " + what + " (" + std::to_string(size_bytes) + " B)");
  owned_.push_back(ptr);
  device_->name_allocation(ptr, what);  // for the cpu device's extent errors
  return ptr;
}

Status Executable::allocate_all() {
  const plan::Plan& p = plan();
  if (memory_.arena.size_bytes != 0) {
    KERN_ASSIGN_OR_RETURN(auto arena,
                          allocate_owned(memory_.arena.size_bytes, memory_.arena.align_bytes, "the workspace arena"));
    arena_ = arena;
  }
  // Regions in the arena are views of it; weights are bound later (in place
  // or allocated and copied); everything else gets its own allocation.
  auto place = [&](const std::vector<Region>& regions, std::vector<DevicePtr>& out, const char* what,
                   auto name_of, auto skip) -> Status {
    out.assign(regions.size(), 0);
    for (size_t i = 0; i < regions.size(); ++i) {
      const Region& r = regions[i];
      if (r.size_bytes == 0 || skip(i)) continue;
      if (r.arena_offset) {
        out[i] = arena_ + *r.arena_offset;
        continue;
      }
      KERN_ASSIGN_OR_RETURN(auto ptr,
                            allocate_owned(r.size_bytes, r.align_bytes, std::string(what) + " '" + name_of(i) + "'"));
      out[i] = ptr;
    }
    return {};
  };
  auto at = [](const auto* vec) {
    return [vec](size_t i) { return vec->Get(static_cast<flatbuffers::uoffset_t>(i))->name()->str(); };
  };
  auto is_weight = [&](size_t i) {
    return p.buffers()->Get(static_cast<flatbuffers::uoffset_t>(i))->class_() == plan::BufferClass::weight;
  };
  auto none = [](size_t) { return false; };
  KERN_RETURN_IF_ERROR(place(memory_.buffers, addr_.buffers, "buffer", at(p.buffers()), is_weight));
  KERN_RETURN_IF_ERROR(place(memory_.states, addr_.states, "state", at(p.states()), none));
  return place(memory_.scratch, addr_.scratch, "scratch", at(p.scratch()), none);
}

void Executable::stage_regions() {
  const plan::Plan& p = plan();
  const uint32_t nbuf = p.buffers()->size(), nstate = p.states()->size();
  region_names_.clear();
  for (const auto* b : *p.buffers()) region_names_.push_back("buffer '" + b->name()->str() + "'");
  for (const auto* s : *p.states()) region_names_.push_back("state '" + s->name()->str() + "'");
  for (const auto* s : *p.scratch()) region_names_.push_back("scratch '" + s->name()->str() + "'");
  regions_.assign(staged_.size(), {});
  for (uint32_t i = 0; i < staged_.size(); ++i) {
    const auto* launches = p.programs()->Get(i)->launches();
    std::vector<ParamRegion>& out = regions_[i];
    out.assign(staged_[i].param_ptrs.size(), ParamRegion{});
    for (uint32_t j = 0; j < launches->size(); ++j) {
      const auto* args = launches->Get(j)->args();
      const uint32_t first = staged_[i].launches[j].first_param;
      for (uint32_t k = 0; k < args->size(); ++k) {
        const auto* a = args->Get(k);
        ParamRegion& r = out[first + k];
        r.offset = a->offset();
        switch (a->kind()) {
          case plan::ArgKind::buffer:
            r = {a->offset(), memory_.buffers[a->index()].size_bytes, &region_names_[a->index()]};
            break;
          case plan::ArgKind::state:
            r = {a->offset(), memory_.states[a->index()].size_bytes, &region_names_[nbuf + a->index()]};
            break;
          case plan::ArgKind::scratch:
            r = {a->offset(), memory_.scratch[a->index()].size_bytes, &region_names_[nbuf + nstate + a->index()]};
            break;
          default: r = {}; break;
        }
      }
    }
  }
}

Status Executable::poison_arena() {
  if (memory_.arena.size_bytes == 0) return {};
  return device_->fill_bytes(arena_, 0xFF, memory_.arena.size_bytes);
}

std::string Executable::launch_context(uint32_t program, size_t launch) const {
  const plan::Plan& p = plan();
  const auto* prog = p.programs()->Get(program);
  const StagedLaunch& l = staged_[program].launches[launch];
  std::string ctx = "program '" + prog->name()->str() + "', dispatch " + std::to_string(l.dispatch);
  if (prog->dispatch_labels() != nullptr) ctx += " '" + prog->dispatch_labels()->Get(l.dispatch)->str() + "'";
  ctx += ", step '" + p.steps()->Get(l.step)->symbol()->str() + "'";
  return ctx;
}

Status Executable::check_symbols(std::span<const uint64_t> symbol_values) const {
  const auto* symbols = plan().symbols();
  if (symbol_values.size() != symbols->size())
    return make_error(ErrorKind::kUsage, std::to_string(symbol_values.size()) + " symbol values given, the plan has " +
                                             std::to_string(symbols->size()) + " symbols");
  for (flatbuffers::uoffset_t i = 0; i < symbols->size(); ++i) {
    const auto* s = symbols->Get(i);
    if (symbol_values[i] < s->min() || symbol_values[i] > s->max())
      return make_error(ErrorKind::kUsage, "symbol '" + s->name()->str() + "' = " + std::to_string(symbol_values[i]) +
                                               " is outside its bounds [" + std::to_string(s->min()) + ", " +
                                               std::to_string(s->max()) + "]");
  }
  return {};
}

Status Executable::run_program(uint32_t program, std::span<const uint64_t> symbol_values) {
  KERN_RETURN_IF_ERROR(check_open());
  if (program >= staged_.size())
    return make_error(ErrorKind::kUsage, "program index " + std::to_string(program) + " out of range (" +
                                             std::to_string(staged_.size()) + " programs)");
  KERN_RETURN_IF_ERROR(check_symbols(symbol_values));
  if (poison_) {  // every run starts from NaN workspace: nothing survives between runs
    KERN_RETURN_IF_ERROR(poison_arena(), "--poison-workspace");
  }
  GraphDecision d = graphs_.decide(program, symbol_values);
  if (d.action == GraphAction::kReplay) {
    // Same key as the capture: the staged values already match; only the graph is launched.
    KERN_RETURN_IF_ERROR(check_replay(*d.graph, program, symbol_values));
    Status s = device_->launch_graph(d.graph->handle);
    if (s.ok()) {
      ++graph_stats_.replays;
      ++traffic_.program_runs;
      ++traffic_.launches;
      last_symbols_.assign(symbol_values.begin(), symbol_values.end());
      return {};
    }
    graph_failed(program, "launching the graph of", s.error());
    d.action = GraphAction::kEager;
  }
  StagedProgram& sp = staged_[program];
  int64_t bad = apply_symbols(sp, symbol_values);
  if (bad >= 0)
    return make_error(ErrorKind::kDevice,
                      "grid, shared memory or an expression argument overflows at these symbol values")
        .with_context(launch_context(program, static_cast<size_t>(bad)));
  if (d.action == GraphAction::kCapture) {
    Status s = capture_and_launch(program, symbol_values);
    if (s.ok()) {
      ++traffic_.program_runs;
      ++traffic_.launches;
      last_symbols_.assign(symbol_values.begin(), symbol_values.end());
      return {};
    }
    graph_failed(program, "capturing", s.error());  // falls back to eager below, once
  }
  KERN_RETURN_IF_ERROR(launch_eager(program));
  ++graph_stats_.eager_runs;
  ++traffic_.program_runs;
  traffic_.launches += sp.launches.size();
  last_symbols_.assign(symbol_values.begin(), symbol_values.end());
  return {};
}

Status Executable::launch_eager(uint32_t program) { return launch_range(program, 0, staged_[program].launches.size()); }

Status Executable::launch_range(uint32_t program, size_t first, size_t end) {
  // Replay: array indexing only (style.md §5). Indices were checked by
  // validate_plan; pointers were resolved by stage_program.
  StagedProgram& sp = staged_[program];
  for (size_t i = first; i < end; ++i) {
    const StagedLaunch& l = sp.launches[i];
    KERN_RETURN_IF_ERROR(device_->launch_in_regions(l.step, l.dims, sp.param_ptrs.data() + l.first_param,
                                                    regions_[program].data() + l.first_param),
                         launch_context(program, i));  // cold path: names are built only on failure
  }
  return {};
}

Status Executable::capture_and_launch(uint32_t program, std::span<const uint64_t> symbol_values) {
  KERN_RETURN_IF_ERROR(device_->begin_capture());
  Status s = launch_eager(program);  // recorded, not run
  if (!s.ok()) return join(std::move(s), device_->abort_capture());
  KERN_ASSIGN_OR_RETURN(auto graph, device_->end_capture());
  graphs_.add(program, symbol_values, graph);
  ++graph_stats_.captures;
  return device_->launch_graph(graph);  // a failure here disables graphs; the graph is destroyed with the rest
}

void Executable::graph_failed(uint32_t program, const std::string& what, const Error& e) {
  std::string warning = graphs_.fail(plan().programs()->Get(program)->name()->str(), what, e);
  ++graph_stats_.fallbacks;
  if (!warning.empty() && on_warning_) on_warning_(warning);
}

Status Executable::write_input(uint32_t buffer, std::span<const uint8_t> bytes, uint64_t offset_bytes) {
  KERN_RETURN_IF_ERROR(check_open());
  const plan::Plan& p = plan();
  if (buffer >= p.buffers()->size())
    return make_error(ErrorKind::kUsage, "buffer index " + std::to_string(buffer) + " out of range");
  const auto* b = p.buffers()->Get(buffer);
  if (b->class_() != plan::BufferClass::input && b->class_() != plan::BufferClass::carry)
    return make_error(ErrorKind::kUsage, "buffer '" + b->name()->str() + "' is not an input or carry buffer");
  if (offset_bytes > b->max_size_bytes() || bytes.size() > b->max_size_bytes() - offset_bytes)
    return make_error(ErrorKind::kUsage, "writing " + std::to_string(bytes.size()) + " B at offset " +
                                             std::to_string(offset_bytes) + " into buffer '" + b->name()->str() +
                                             "' of " + std::to_string(b->max_size_bytes()) + " B");
  if (bytes.empty()) return {};
  ++traffic_.host_writes;
  return device_->copy_to_device(addr_.buffers[buffer] + offset_bytes, bytes.data(), bytes.size());
}

Status Executable::read_buffer(uint32_t buffer, std::span<uint8_t> out) {
  KERN_RETURN_IF_ERROR(check_open());
  const plan::Plan& p = plan();
  if (buffer >= p.buffers()->size())
    return make_error(ErrorKind::kUsage, "buffer index " + std::to_string(buffer) + " out of range");
  const auto* b = p.buffers()->Get(buffer);
  if (out.size() > b->max_size_bytes())
    return make_error(ErrorKind::kUsage, "reading " + std::to_string(out.size()) + " B from buffer '" +
                                             b->name()->str() + "' of " + std::to_string(b->max_size_bytes()) + " B");
  if (out.empty()) return {};
  ++traffic_.host_waits;  // copy_to_host drains the device
  return device_->copy_to_host(out.data(), addr_.buffers[buffer], out.size());
}

Status Executable::read_buffer_async(uint32_t buffer, uint32_t slot, uint64_t bytes) {
  KERN_RETURN_IF_ERROR(check_open());
  const plan::Plan& p = plan();
  if (buffer >= p.buffers()->size())
    return make_error(ErrorKind::kUsage, "buffer index " + std::to_string(buffer) + " out of range");
  const auto* b = p.buffers()->Get(buffer);
  if (bytes > b->max_size_bytes())
    return make_error(ErrorKind::kUsage, "reading " + std::to_string(bytes) + " B from buffer '" + b->name()->str() +
                                             "' of " + std::to_string(b->max_size_bytes()) + " B");
  KERN_RETURN_IF_ERROR(device_->read_async(slot, addr_.buffers[buffer], bytes));
  readback_after_run_[slot] = traffic_.program_runs;  // slot < kReadbackSlots: read_async checked it
  return {};
}

Result<std::span<const uint8_t>> Executable::wait_readback(uint32_t slot) {
  KERN_RETURN_IF_ERROR(check_open());
  KERN_ASSIGN_OR_RETURN(auto bytes, device_->wait_read(slot));
  if (readback_after_run_[slot] == traffic_.program_runs) ++traffic_.host_waits;
  else ++traffic_.overlapped_waits;
  return bytes;
}

Status Executable::synchronize() {
  KERN_RETURN_IF_ERROR(check_open());
  ++traffic_.host_waits;
  return device_->synchronize();
}

Result<uint64_t> Executable::buffer_size_bytes(uint32_t buffer, std::span<const uint64_t> symbol_values) const {
  const plan::Plan& p = plan();
  if (buffer >= p.buffers()->size())
    return make_error(ErrorKind::kUsage, "buffer index " + std::to_string(buffer) + " out of range");
  if (symbol_values.size() != p.symbols()->size())
    return make_error(ErrorKind::kUsage, "symbol values do not match the plan's symbols");
  const auto* b = p.buffers()->Get(buffer);
  uint64_t bytes = plan_dtype_size(b->dtype());
  for (const auto* d : *b->shape()) {
    auto v = evaluate_chain(*d, symbol_values);
    auto next = v ? checked_mul(bytes, *v) : std::nullopt;
    if (!next) return make_error(ErrorKind::kUsage, "buffer '" + b->name()->str() + "': size overflows u64");
    bytes = *next;
  }
  return bytes;
}

}  // namespace kern::load
