// One side of kern-run compare: spans, loading, running a span (compare_side.h).
#include "kern-run/compare_side.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "kern-load/device_select.h"
#include "kern-load/safetensors.h"

namespace kern::run::compare {

using load::RegionKind;
using load::RegionRef;

std::optional<RegionInfo> arg_region(const plan::Plan& p, const plan::LaunchArg* a) {
  if (a->kind() == plan::ArgKind::buffer) {
    const auto* b = p.buffers()->Get(a->index());
    if (b->class_() == plan::BufferClass::weight) return std::nullopt;  // never written; fused plans pack them
    return RegionInfo{{RegionKind::kBuffer, a->index()}, "buffer '" + b->name()->str() + "'", b->dtype()};
  }
  if (a->kind() == plan::ArgKind::state) {
    const auto* s = p.states()->Get(a->index());
    // The plan records no state dtype: kern's per-token states are bf16 KV
    // caches; fixed states (counters) are compared as exact i32 words.
    return RegionInfo{{RegionKind::kState, a->index()}, "state '" + s->name()->str() + "'",
                      s->bytes_per_token() > 0 ? plan::DType::bf16 : plan::DType::i32};
  }
  return std::nullopt;  // scratch is private to a kernel; scalars are not memory
}

/// [first, end) launches of each dispatch of `program`.
Result<std::vector<std::pair<uint32_t, uint32_t>>> dispatch_launches(const plan::Plan& p, uint32_t program) {
  const auto* prog = p.programs()->Get(program);
  const uint32_t n = prog->dispatch_count();
  std::vector<std::pair<uint32_t, uint32_t>> ranges(n, {UINT32_MAX, 0});
  const auto* launches = prog->launches();
  uint32_t prev = 0;
  for (uint32_t i = 0; i < launches->size(); ++i) {
    const uint32_t d = launches->Get(i)->dispatch();
    if (d < prev || d >= n)
      return make_error(ErrorKind::kManifest, "program '" + prog->name()->str() + "': launch " + std::to_string(i) +
                                                  " of dispatch " + std::to_string(d) +
                                                  " is out of dispatch order: spans need each dispatch's launches together");
    if (ranges[d].first == UINT32_MAX) ranges[d].first = i;
    ranges[d].second = i + 1;
    prev = d;
  }
  uint32_t end = 0;
  for (auto& r : ranges) {
    if (r.first == UINT32_MAX) r = {end, end};  // a dispatch without launches
    end = r.second;
  }
  return ranges;
}

std::vector<std::string> dispatch_labels(const plan::Plan& p, uint32_t program) {
  const auto* prog = p.programs()->Get(program);
  std::vector<std::string> labels;
  for (uint32_t d = 0; d < prog->dispatch_count(); ++d)
    labels.push_back(prog->dispatch_labels() != nullptr && d < prog->dispatch_labels()->size()
                         ? prog->dispatch_labels()->Get(d)->str()
                         : "dispatch " + std::to_string(d));
  return labels;
}

SideSpan make_side_span(const plan::Plan& p, uint32_t program, uint32_t first, uint32_t end) {
  SideSpan s{first, end, {}, {}, {}};
  std::set<std::string> seen;
  std::map<std::string, size_t> written_at;
  const auto* launches = p.programs()->Get(program)->launches();
  for (uint32_t i = first; i < end; ++i) {
    const auto* l = launches->Get(i);
    const auto* params = p.steps()->Get(l->step())->params();
    for (uint32_t k = 0; k < l->args()->size() && k < params->size(); ++k) {
      const auto* prm = params->Get(k);
      if (prm->kind() != plan::ParamKind::ptr && prm->kind() != plan::ParamKind::buffer) continue;
      auto r = arg_region(p, l->args()->Get(k));
      if (!r) continue;
      const bool reads = prm->access() != plan::Access::out;
      const bool writes = prm->access() != plan::Access::in_;
      if (reads && !seen.count(r->key)) s.inputs.push_back(*r);
      seen.insert(r->key);
      if (!writes) continue;
      auto it = written_at.find(r->key);
      if (it == written_at.end()) {
        written_at[r->key] = s.written.size();
        s.written.push_back(*r);
        s.last_writer.push_back(i);
      } else {
        s.last_writer[it->second] = i;
      }
    }
  }
  return s;
}

Result<std::unique_ptr<engine::Model>> load_side(const CompareSide& side, const CompareConfig& cfg, uint64_t capacity,
                                                 std::string* device_name) {
  KERN_ASSIGN_OR_RETURN(auto opened, engine::open_model_plan(side.plan_path));
  std::unique_ptr<load::Device> device;
  if (side.cpu_kernels) {
    device = std::make_unique<load::CpuDevice>(side.cpu_kernels);
  } else {
    KERN_ASSIGN_OR_RETURN(auto choice, load::parse_device_choice(side.device), "--device");
    load::CudaDeviceOptions cuda;
    cuda.pdl = cfg.pdl;
    std::string note;
    KERN_ASSIGN_OR_RETURN(device, load::select_device(choice, &note, cuda));
  }
  *device_name = device->name();
  load::ExecutableOptions eo;
  eo.capacity_tokens = (capacity + engine::kKvBlockTokens - 1) / engine::kKvBlockTokens * engine::kKvBlockTokens;
  eo.graphs = false;  // spans run through run_launches, which never uses graphs
  eo.random_weights_seed = cfg.random_weights_seed;
  std::filesystem::path dir = side.kernels_dir.empty() ? std::filesystem::path(side.plan_path).parent_path()
                                                       : std::filesystem::path(side.kernels_dir);
  eo.kernels_dir = dir.empty() ? std::filesystem::current_path().string() : dir.string();
  Result<std::unique_ptr<load::Executable>> exe = make_error(ErrorKind::kUsage, "not loaded");
  if (cfg.random_weights_seed) {
    exe = load::Executable::load(std::move(opened.plan), std::move(device), nullptr, eo);
  } else {
    KERN_ASSIGN_OR_RETURN(auto weights, load::Safetensors::open(cfg.weights_path));
    exe = load::Executable::load(std::move(opened.plan), std::move(device), std::move(weights), eo);
  }
  KERN_ASSIGN_OR_RETURN(auto loaded, std::move(exe));
  return engine::Model::adopt(std::move(loaded), false, capacity, *device_name);
}

/// Runs a side's span, reading each written region `want` accepts right
/// after its last write.
Result<SpanOutput> run_span(Side& side, int prog, const SideSpan& sp,
                            const std::function<bool(const RegionInfo&)>& want) {
  SpanOutput out;
  load::Executable& exe = side.exe();
  const uint32_t program = side.programs[prog];
  auto launch = [&](uint32_t first, uint32_t end) -> Status {
    if (end <= first) return {};
    if (side.timed) {
      KERN_RETURN_IF_ERROR(exe.device().record_mark(0));
      KERN_RETURN_IF_ERROR(exe.run_launches(program, side.symbols, first, end - first));
      KERN_RETURN_IF_ERROR(exe.device().record_mark(1));
      KERN_ASSIGN_OR_RETURN(auto ms, exe.device().mark_elapsed_ms(0, 1));
      out.ms += ms;
      return {};
    }
    auto t0 = std::chrono::steady_clock::now();
    KERN_RETURN_IF_ERROR(exe.run_launches(program, side.symbols, first, end - first));
    out.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return {};
  };
  std::vector<uint32_t> cuts;
  for (size_t i = 0; i < sp.written.size(); ++i)
    if (want(sp.written[i])) cuts.push_back(sp.last_writer[i]);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  uint32_t cur = sp.launch_first;
  for (uint32_t cut : cuts) {
    KERN_RETURN_IF_ERROR(launch(cur, cut + 1));
    cur = cut + 1;
    for (size_t i = 0; i < sp.written.size(); ++i) {
      if (sp.last_writer[i] != cut || !want(sp.written[i])) continue;
      const RegionInfo& r = sp.written[i];
      uint64_t size = 0;
      if (r.ref.kind == RegionKind::kBuffer) {
        KERN_ASSIGN_OR_RETURN(size, exe.buffer_size_bytes(r.ref.index, side.symbols));
      } else {
        KERN_ASSIGN_OR_RETURN(size, exe.region_size_bytes(r.ref));
      }
      std::vector<uint8_t> bytes(size);
      KERN_RETURN_IF_ERROR(exe.read_region(r.ref, 0, bytes), "reading " + r.key);
      out.bytes[r.key] = std::move(bytes);
    }
  }
  KERN_RETURN_IF_ERROR(launch(cur, sp.launch_end));
  return out;
}

/// Builds a side's spans from the aligned dispatch spans (`a_side`: use the A ranges).
Status build_spans(Side& side, int prog, const std::vector<DispatchSpan>& spans, bool a_side) {
  const plan::Plan& p = side.plan();
  KERN_ASSIGN_OR_RETURN(auto ranges, dispatch_launches(p, side.programs[prog]));
  side.spans[prog].clear();
  for (const DispatchSpan& s : spans) {
    const uint32_t d0 = a_side ? s.a_first : s.b_first, d1 = a_side ? s.a_end : s.b_end;
    side.spans[prog].push_back(make_side_span(p, side.programs[prog], ranges[d0].first, ranges[d1 - 1].second));
  }
  return {};
}

Status write_step_inputs(Side& side, const int64_t* ids, uint64_t n, uint64_t pos) {
  side.symbols.assign(side.plan().symbols()->size(), 0);
  side.symbols[side.contract().tokens_symbol] = n;
  // The batch-1 programs (prefill, decode) run at batch = 1 (model_runner.cpp).
  if (side.contract().batch_symbol != engine::CausalLmContract::kNoSymbol) side.symbols[side.contract().batch_symbol] = 1;
  return side.model->runner().write_inputs(ids, n, pos);
}

Result<int64_t> read_next_token(Side& side) {
  int64_t id = 0;
  KERN_RETURN_IF_ERROR(side.exe().read_buffer(side.contract().next_token,
                                              std::span(reinterpret_cast<uint8_t*>(&id), sizeof id)));
  return id;
}

std::string buffer_key(const plan::Plan& p, uint32_t buffer) {
  return "buffer '" + p.buffers()->Get(buffer)->name()->str() + "'";
}

}  // namespace kern::run::compare
