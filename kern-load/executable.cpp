#include "kern-load/executable.h"

#include <chrono>

#include "common/expr.h"
#include "kern-load/plan_expr.h"
#include "kern-load/random_weights.h"
#include "kern-load/weight_binding.h"

namespace kern::load {

Executable::Executable(PlanFile plan, std::unique_ptr<Device> device)
    : plan_(std::move(plan)), device_(std::move(device)) {}

Executable::~Executable() {
  for (const CapturedGraph& g : graphs_.take_graphs()) device_->destroy_graph(g.handle);
  // Cleanup failures cannot be reported from a destructor; the device keeps
  // no state that would make a later free unsafe.
  for (auto* v : {&addr_.buffers, &addr_.states, &addr_.scratch})
    for (DevicePtr ptr : *v)
      if (ptr != 0) (void)device_->free(ptr);
}

Result<std::unique_ptr<Executable>> Executable::load(PlanFile plan, std::unique_ptr<Device> device,
                                                     const Safetensors* weights, const ExecutableOptions& options,
                                                     std::vector<std::string>* notes, const LoadMonitor* monitor) {
  std::unique_ptr<Executable> exe(new Executable(std::move(plan), std::move(device)));
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
  exe->graphs_ = GraphPolicy(gpo);
  exe->on_warning_ = options.on_warning;
  using Clock = std::chrono::steady_clock;
  LoadTimings timings;
  auto t0 = Clock::now();
  auto lap = [&t0](double& ms) {
    auto now = Clock::now();
    ms = std::chrono::duration<double, std::milli>(now - t0).count();
    t0 = now;
  };
  Status s = exe->device_->load_kernels(exe->plan_, options.kernels_dir);
  if (!s.ok()) return s.error().with_context(path + ": loading kernels");
  lap(timings.kernels_ms);
  auto memory = plan_memory(p, options.capacity_tokens);
  if (!memory.ok()) return memory.error().with_context(path);
  exe->memory_ = std::move(memory.value());
  KERN_RETURN_IF_ERROR(exe->allocate_all());
  lap(timings.allocate_ms);
  const auto* progress =
      monitor != nullptr && monitor->on_weight_progress ? &monitor->on_weight_progress : nullptr;
  if (random_weights) {
    auto written = fill_random_weights(p, *options.random_weights_seed, *exe->device_, exe->addr_.buffers, progress);
    if (!written.ok()) return written.error();
    lap(timings.weights_ms);
    timings.weight_bytes = *written;
  } else {
    auto bound = bind_weights(p, weights, *exe->device_, exe->addr_.buffers, progress);
    if (!bound.ok()) return bound.error();
    lap(timings.weights_ms);
    timings.weight_bytes = bound->bytes_copied;
    if (notes != nullptr)
      for (const auto& name : bound->unused_tensors)
        notes->push_back(weights->path() + ": tensor '" + name + "' is not used by the plan");
  }
  for (uint32_t i = 0; i < p.programs()->size(); ++i) exe->staged_.push_back(stage_program(p, i, exe->addr_));
  lap(timings.stage_ms);
  if (monitor != nullptr && monitor->timings != nullptr) *monitor->timings = timings;
  return exe;
}

Status Executable::allocate_all() {
  const plan::Plan& p = plan();
  auto alloc = [&](const std::vector<Region>& regions, std::vector<DevicePtr>& out, const char* what,
                   auto name_of) -> Status {
    out.assign(regions.size(), 0);
    for (size_t i = 0; i < regions.size(); ++i) {
      if (regions[i].size_bytes == 0) continue;
      auto ptr = device_->allocate(regions[i].size_bytes, regions[i].align_bytes);
      if (!ptr.ok())
        return ptr.error().with_context(std::string("allocating ") + what + " '" + name_of(i) + "' (" +
                                        std::to_string(regions[i].size_bytes) + " B)");
      out[i] = *ptr;
      device_->name_allocation(*ptr, std::string(what) + " '" + name_of(i) + "'");
    }
    return {};
  };
  auto at = [](const auto* vec) {
    return [vec](size_t i) { return vec->Get(static_cast<flatbuffers::uoffset_t>(i))->name()->str(); };
  };
  KERN_RETURN_IF_ERROR(alloc(memory_.buffers, addr_.buffers, "buffer", at(p.buffers())));
  KERN_RETURN_IF_ERROR(alloc(memory_.states, addr_.states, "state", at(p.states())));
  return alloc(memory_.scratch, addr_.scratch, "scratch", at(p.scratch()));
}

Error Executable::launch_error(uint32_t program, size_t launch, const std::string& what) const {
  const plan::Plan& p = plan();
  const auto* prog = p.programs()->Get(program);
  const StagedLaunch& l = staged_[program].launches[launch];
  std::string ctx = "program '" + prog->name()->str() + "', dispatch " + std::to_string(l.dispatch);
  if (prog->dispatch_labels() != nullptr) ctx += " '" + prog->dispatch_labels()->Get(l.dispatch)->str() + "'";
  ctx += ", step '" + p.steps()->Get(l.step)->symbol()->str() + "'";
  return make_error(ErrorKind::kDevice, what).with_context(ctx);
}

Status Executable::run_program(uint32_t program, std::span<const uint64_t> symbol_values) {
  const plan::Plan& p = plan();
  if (program >= staged_.size())
    return make_error(ErrorKind::kUsage, "program index " + std::to_string(program) + " out of range (" +
                                             std::to_string(staged_.size()) + " programs)");
  const auto* symbols = p.symbols();
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
    return launch_error(program, static_cast<size_t>(bad),
                        "grid, shared memory or an expression argument overflows at these symbol values");
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

Status Executable::launch_eager(uint32_t program) {
  // Replay: array indexing only (style.md §5). Indices were checked by
  // validate_plan; pointers were resolved by stage_program.
  StagedProgram& sp = staged_[program];
  for (size_t i = 0; i < sp.launches.size(); ++i) {
    const StagedLaunch& l = sp.launches[i];
    Status s = device_->launch(l.step, l.dims, sp.param_ptrs.data() + l.first_param);
    if (!s.ok()) [[unlikely]] {
      Error e = launch_error(program, i, s.error().message);
      e.kind = s.error().kind;
      return e;
    }
  }
  return {};
}

Status Executable::capture_and_launch(uint32_t program, std::span<const uint64_t> symbol_values) {
  KERN_RETURN_IF_ERROR(device_->begin_capture());
  Status s = launch_eager(program);  // recorded, not run
  if (!s.ok()) {
    device_->abort_capture();
    return s;
  }
  auto graph = device_->end_capture();
  if (!graph.ok()) return graph.error();
  graphs_.add(program, symbol_values, *graph);
  ++graph_stats_.captures;
  return device_->launch_graph(*graph);  // a failure here disables graphs; the graph is destroyed with the rest
}

void Executable::graph_failed(uint32_t program, const std::string& what, const Error& e) {
  std::string warning = graphs_.fail(plan().programs()->Get(program)->name()->str(), what, e);
  ++graph_stats_.fallbacks;
  if (!warning.empty() && on_warning_) on_warning_(warning);
}

Status Executable::write_input(uint32_t buffer, std::span<const uint8_t> bytes, uint64_t offset_bytes) {
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
  auto bytes = device_->wait_read(slot);
  if (!bytes.ok()) return bytes.error();
  if (readback_after_run_[slot] == traffic_.program_runs) ++traffic_.host_waits;
  else ++traffic_.overlapped_waits;
  return bytes;
}

Status Executable::synchronize() {
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
