// kern-run compare's engine: three loaded sides driven span by span (compare_session.h).
#include "kern-run/compare_session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "common/dtype.h"
#include "kern-engine/model.h"
#include "kern-engine/request.h"
#include "kern-load/device_select.h"
#include "kern-load/executable.h"
#include "kern-load/safetensors.h"

namespace kern::run {

bool SpanResult::replay_ok() const {
  return std::all_of(regions.begin(), regions.end(), [](const RegionResult& r) { return r.replay.within_tolerance; });
}
bool SpanResult::free_ok() const {
  return std::all_of(regions.begin(), regions.end(), [](const RegionResult& r) { return r.free.within_tolerance; });
}

namespace {

using load::RegionKind;
using load::RegionRef;

constexpr int kPrefill = 0, kDecode = 1;
constexpr const char* kProgramNames[2] = {"prefill", "decode"};

/// A region a span touches, keyed by class and name ("buffer 'qkv'") so two
/// plans' regions pair up.
struct RegionInfo {
  RegionRef ref;
  std::string key;
  plan::DType dtype = plan::DType::u8;
};

/// One side's part of one span: its launches, what they write (each read
/// right after its last write in the span: later launches of the span may
/// reuse its arena bytes) and what they read before writing (the replay's
/// inputs).
struct SideSpan {
  uint32_t launch_first = 0, launch_end = 0;
  std::vector<RegionInfo> written;
  std::vector<uint32_t> last_writer;  ///< by `written`: the launch index of its last write
  std::vector<RegionInfo> inputs;
};

/// A span's bytes as one side wrote them, by region key, and its launch time.
struct SpanOutput {
  std::map<std::string, std::vector<uint8_t>> bytes;
  double ms = 0;
};

/// One loaded side.
struct Side {
  std::string name;  ///< "A", "B"
  std::unique_ptr<engine::Model> model;
  uint32_t programs[2] = {0, 0};  ///< Plan.programs index of prefill, decode
  std::vector<SideSpan> spans[2];
  std::vector<uint64_t> symbols;
  bool timed = false;

  load::Executable& exe() { return model->executable(); }
  const engine::Qwen3Contract& contract() const { return model->contract(); }
  const plan::Plan& plan() { return exe().plan(); }
};

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

/// The comparison in progress.
class Session {
 public:
  explicit Session(const CompareConfig& cfg) : cfg_(cfg) {}

  Result<CompareResult> run() {
    KERN_RETURN_IF_ERROR(load_all());
    KERN_RETURN_IF_ERROR(align());
    const auto& ids = cfg_.prompt_ids;
    const uint64_t n = ids.size();
    const uint64_t chunk = a_.contract().clamp_chunk(std::min(cfg_.chunk, b_free_.contract().clamp_chunk(cfg_.chunk)));
    for (Side* s : {&a_, &b_replay_, &b_free_}) KERN_RETURN_IF_ERROR(s->model->runner().write_block_table(), s->name);
    // Prefill: the first n - 1 ids, in chunks (the last one is decode's first input, as the engine does).
    for (uint64_t done = 0; done + 1 < n; done += chunk) {
      const uint64_t len = std::min(chunk, n - 1 - done);
      KERN_RETURN_IF_ERROR(run_program(kPrefill, ids.data() + done, len, done,
                                       "prefill chunk at position " + std::to_string(done)),
                           "prefill chunk at position " + std::to_string(done));
      ++result_.prefill_chunks;
      result_.prefill_tokens += len;
    }
    int64_t input = ids.back();
    for (uint64_t k = 0; k < cfg_.steps; ++k) {
      const uint64_t pos = n - 1 + k;
      const std::string at = "decode step " + std::to_string(k);
      a_logits_.clear();
      b_logits_.clear();
      KERN_RETURN_IF_ERROR(run_program(kDecode, &input, 1, pos, at), at);
      if (a_logits_.empty() || b_logits_.empty())
        return make_error(ErrorKind::kManifest, "no span of decode writes buffer 'logits'").with_context(at);
      StepResult st;
      st.pos = pos;
      st.input_id = input;
      KERN_ASSIGN_OR_RETURN(st.a_id, read_next_token(a_), "A: " + at);
      KERN_ASSIGN_OR_RETURN(st.b_id, read_next_token(b_free_), "B: " + at);
      st.logits = compare_logits(logits_dtype_, a_logits_, b_logits_, result_.vocab);
      a_step_logits_.push_back(a_logits_);
      result_.steps.push_back(st);
      input = st.a_id;  // both sides follow A's sequence
    }
    KERN_RETURN_IF_ERROR(noise_floor(chunk), "the noise floor (A's second run)");
    return std::move(result_);
  }

 private:
  Status load_all() {
    const auto& ids = cfg_.prompt_ids;
    if (ids.empty()) return make_error(ErrorKind::kUsage, "the prompt is empty");
    KERN_ASSIGN_OR_RETURN(auto pa, engine::open_model_plan(cfg_.a.plan_path), "A");
    KERN_ASSIGN_OR_RETURN(auto pb, engine::open_model_plan(cfg_.b.plan_path), "B");
    if (pa.contract.vocab != pb.contract.vocab)
      return make_error(ErrorKind::kUsage, "A's vocabulary has " + std::to_string(pa.contract.vocab) +
                                               " ids, B's " + std::to_string(pb.contract.vocab) +
                                               ": the plans are not of one model");
    result_.vocab = pa.contract.vocab;
    KERN_RETURN_IF_ERROR(engine::check_token_ids(ids, pa.contract.vocab, "prompt"), "--prompt-ids");
    // Capacity: the prompt and every decode step's KV, within both contracts' bounds.
    const uint64_t capacity = ids.size() + cfg_.steps;
    for (const auto* c : {&pa.contract, &pb.contract})
      KERN_RETURN_IF_ERROR(engine::check_capacity(*c, capacity),
                           "the prompt (" + std::to_string(ids.size()) + " ids) and --steps " +
                               std::to_string(cfg_.steps));
    a_.name = "A";
    b_replay_.name = "B";
    b_free_.name = "B";
    KERN_ASSIGN_OR_RETURN(a_.model, load_side(cfg_.a, cfg_, capacity, &result_.a_device), "A");
    KERN_ASSIGN_OR_RETURN(b_replay_.model, load_side(cfg_.b, cfg_, capacity, &result_.b_device), "B");
    KERN_ASSIGN_OR_RETURN(b_free_.model, load_side(cfg_.b, cfg_, capacity, &result_.b_device), "B");
    result_.a_plan = cfg_.a.plan_path;
    result_.b_plan = cfg_.b.plan_path;
    for (Side* s : {&a_, &b_replay_, &b_free_}) {
      s->programs[kPrefill] = s->contract().prefill;
      s->programs[kDecode] = s->contract().decode;
      s->timed = s->exe().device().supports_timing();
    }
    const plan::Plan& p = a_.plan();
    logits_dtype_ = p.buffers()->Get(a_.contract().logits)->dtype();
    if (b_free_.plan().buffers()->Get(b_free_.contract().logits)->dtype() != logits_dtype_)
      return make_error(ErrorKind::kUsage, "A's and B's logits have different dtypes");
    result_.logits_dtype = std::string(plan::EnumNameDType(logits_dtype_));
    a_logits_key_ = buffer_key(p, a_.contract().logits);
    b_logits_key_ = buffer_key(b_free_.plan(), b_free_.contract().logits);
    return {};
  }

  Status align() {
    for (int prog : {kPrefill, kDecode}) {
      auto la = dispatch_labels(a_.plan(), a_.programs[prog]);
      auto lb = dispatch_labels(b_free_.plan(), b_free_.programs[prog]);
      std::vector<DispatchSpan> spans;
      if (cfg_.one_plan || la == lb) {
        if (la.size() != lb.size())
          return make_error(ErrorKind::kUsage, std::string(kProgramNames[prog]) + ": one plan with " +
                                                   std::to_string(la.size()) + " and " + std::to_string(lb.size()) +
                                                   " dispatches");
        spans = identity_spans(static_cast<uint32_t>(la.size()));
      } else {
        spans = align_dispatches(la, lb);
      }
      KERN_RETURN_IF_ERROR(build_spans(a_, prog, spans, true), "A");
      KERN_RETURN_IF_ERROR(build_spans(b_replay_, prog, spans, false), "B");
      KERN_RETURN_IF_ERROR(build_spans(b_free_, prog, spans, false), "B");
      first_span_[prog] = result_.spans.size();
      for (uint32_t s = 0; s < spans.size(); ++s) {
        SpanResult r;
        r.program = kProgramNames[prog];
        r.index = s;
        r.dispatches = spans[s];
        r.a_labels.assign(la.begin() + spans[s].a_first, la.begin() + spans[s].a_end);
        r.b_labels.assign(lb.begin() + spans[s].b_first, lb.begin() + spans[s].b_end);
        const SideSpan& sa = a_.spans[prog][s];
        const SideSpan& sb = b_free_.spans[prog][s];
        std::map<std::string, plan::DType> b_written;
        for (const auto& w : sb.written) b_written[w.key] = w.dtype;
        for (const auto& w : sa.written) {
          auto it = b_written.find(w.key);
          if (it != b_written.end() && it->second == w.dtype) {
            r.regions.push_back({w.key, std::string(plan::EnumNameDType(w.dtype)), {}, {}, "", ""});
            b_written.erase(it);
          } else {
            r.only_a.push_back(w.key);
          }
        }
        for (const auto& [key, dtype] : b_written) r.only_b.push_back(key);
        result_.spans.push_back(std::move(r));
      }
    }
    return {};
  }

  /// One program run on every side, span by span.
  Status run_program(int prog, const int64_t* ids, uint64_t n, uint64_t pos, const std::string& at) {
    KERN_RETURN_IF_ERROR(write_step_inputs(a_, ids, n, pos), "A");
    KERN_RETURN_IF_ERROR(write_step_inputs(b_replay_, ids, n, pos), "B");
    KERN_RETURN_IF_ERROR(write_step_inputs(b_free_, ids, n, pos), "B");
    // Buffers hold this run's values only (the host rewrote the inputs); states persist.
    std::erase_if(shadow_, [](const auto& kv) { return kv.first.rfind("buffer ", 0) == 0; });
    auto all = [](const RegionInfo&) { return true; };
    for (size_t s = 0; s < a_.spans[prog].size(); ++s) {
      const SideSpan& sb = b_replay_.spans[prog][s];
      for (const RegionInfo& in : sb.inputs) {  // B-replay starts the span from A's values
        auto it = shadow_.find(in.key);
        if (it == shadow_.end()) continue;
        uint64_t size = 0;
        if (in.ref.kind == RegionKind::kBuffer) {
          KERN_ASSIGN_OR_RETURN(size, b_replay_.exe().buffer_size_bytes(in.ref.index, b_replay_.symbols), "B");
        } else {
          KERN_ASSIGN_OR_RETURN(size, b_replay_.exe().region_size_bytes(in.ref), "B");
        }
        if (size != it->second.size()) continue;  // shaped differently in B: B keeps its own
        KERN_RETURN_IF_ERROR(b_replay_.exe().write_region(in.ref, 0, it->second), "B: writing A's " + in.key);
      }
      KERN_ASSIGN_OR_RETURN(auto out_a, run_span(a_, prog, a_.spans[prog][s], all), "A");
      KERN_ASSIGN_OR_RETURN(auto out_r, run_span(b_replay_, prog, sb, all), "B (span replay)");
      KERN_ASSIGN_OR_RETURN(auto out_f, run_span(b_free_, prog, b_free_.spans[prog][s], all), "B");
      SpanResult& r = result_.spans[first_span_[prog] + s];
      ++r.runs;
      r.a_ms += out_a.ms;
      r.b_ms += out_f.ms;
      for (RegionResult& reg : r.regions) {
        const auto& va = out_a.bytes[reg.name];
        const plan::DType dt = *plan_dtype(reg.dtype);
        RegionDiff dr = compare_region(dt, va, out_r.bytes[reg.name], cfg_.tol);
        RegionDiff df = compare_region(dt, va, out_f.bytes[reg.name], cfg_.tol);
        if (!reg.replay.has_first && dr.has_first) reg.replay_first_at = at;
        if (!reg.free.has_first && df.has_first) reg.free_first_at = at;
        reg.replay.merge(dr);
        reg.free.merge(df);
      }
      if (prog == kDecode) {
        if (auto it = out_a.bytes.find(a_logits_key_); it != out_a.bytes.end()) a_logits_ = it->second;
        if (auto it = out_f.bytes.find(b_logits_key_); it != out_f.bytes.end()) b_logits_ = it->second;
      }
      for (auto& [key, bytes] : out_a.bytes) shadow_[key] = std::move(bytes);
    }
    return {};
  }

  /// A's second run over the same inputs: KL(A||A') per step.
  Status noise_floor(uint64_t chunk) {
    const auto& ids = cfg_.prompt_ids;
    const uint64_t n = ids.size();
    KERN_RETURN_IF_ERROR(a_.model->runner().write_block_table());
    auto none = [](const RegionInfo&) { return false; };
    const std::string key = a_logits_key_;
    auto logits = [&key](const RegionInfo& r) { return r.key == key; };
    for (uint64_t done = 0; done + 1 < n; done += chunk) {
      const uint64_t len = std::min(chunk, n - 1 - done);
      KERN_RETURN_IF_ERROR(write_step_inputs(a_, ids.data() + done, len, done));
      for (const SideSpan& sp : a_.spans[kPrefill]) KERN_RETURN_IF_ERROR(run_span(a_, kPrefill, sp, none));
    }
    for (size_t k = 0; k < result_.steps.size(); ++k) {
      StepResult& st = result_.steps[k];
      KERN_RETURN_IF_ERROR(write_step_inputs(a_, &st.input_id, 1, st.pos));
      std::vector<uint8_t> again;
      for (const SideSpan& sp : a_.spans[kDecode]) {
        KERN_ASSIGN_OR_RETURN(auto out, run_span(a_, kDecode, sp, logits));
        if (auto it = out.bytes.find(key); it != out.bytes.end()) again = std::move(it->second);
      }
      st.floor = compare_logits(logits_dtype_, a_step_logits_[k], again, result_.vocab);
    }
    return {};
  }

  static std::optional<plan::DType> plan_dtype(const std::string& name) {
    for (int d = static_cast<int>(plan::DType::MIN); d <= static_cast<int>(plan::DType::MAX); ++d)
      if (name == plan::EnumNameDType(static_cast<plan::DType>(d))) return static_cast<plan::DType>(d);
    return std::nullopt;
  }

  const CompareConfig& cfg_;
  Side a_, b_replay_, b_free_;
  CompareResult result_;
  size_t first_span_[2] = {0, 0};
  plan::DType logits_dtype_ = plan::DType::bf16;
  std::string a_logits_key_, b_logits_key_;
  std::vector<uint8_t> a_logits_, b_logits_;
  std::vector<std::vector<uint8_t>> a_step_logits_;
  /// A's latest value of every region it wrote, by key (buffers of this run, states of all runs).
  std::map<std::string, std::vector<uint8_t>> shadow_;
};

}  // namespace

Result<CompareResult> run_compare(const CompareConfig& config) {
  Session s(config);
  return s.run();
}

}  // namespace kern::run
