// kern-run compare's engine: three loaded sides driven span by span (compare_session.h).
#include "kern-run/compare_session.h"

#include <algorithm>
#include <map>

#include "kern-engine/request.h"
#include "kern-run/compare_side.h"

namespace kern::run {

bool SpanResult::replay_ok() const {
  return std::all_of(regions.begin(), regions.end(), [](const RegionResult& r) { return r.replay.within_tolerance; });
}
bool SpanResult::free_ok() const {
  return std::all_of(regions.begin(), regions.end(), [](const RegionResult& r) { return r.free.within_tolerance; });
}
ReplayClass SpanResult::replay_class() const {
  const RegionResult* w = worst_region();
  return w != nullptr ? w->measure.cls : ReplayClass::kRounding;
}
const RegionResult* SpanResult::worst_region() const {
  const RegionResult* w = nullptr;
  for (const RegionResult& r : regions) {
    if (!r.judged) continue;
    // NaN rel_l2 never happens (replay_measure); infinities order last as intended.
    if (w == nullptr || r.measure.cls > w->measure.cls ||
        (r.measure.cls == w->measure.cls && r.measure.rel_l2 > w->measure.rel_l2))
      w = &r;
  }
  return w;
}

namespace {

using namespace compare;
using load::RegionKind;

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
    for (SpanResult& sp : result_.spans)
      for (RegionResult& reg : sp.regions)
        reg.measure = reg.replay.exact ? exact_measure(reg.replay.numel, reg.replay.mismatches)
                                       : replay_measure(reg.replay.sums, cfg_.tol.atol);
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
    for (const Side* s : {&a_, &b_free_})
      if (s->contract().logits == engine::CausalLmContract::kNoBuffer)
        return make_error(ErrorKind::kUsage, std::string(s->name) + "'s plan has no 'logits' buffer: --compare reads "
                                             "each decode step's logits (a plan lifted by kern-lift has none)");
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
        const std::string next_token = buffer_key(a_.plan(), a_.contract().next_token);
        for (const auto& w : sa.written) {
          auto it = b_written.find(w.key);
          if (it != b_written.end() && it->second == w.dtype) {
            const bool judged = w.key != next_token;
            r.regions.push_back({w.key, std::string(plan::EnumNameDType(w.dtype)), {}, {}, "", "", judged, {}});
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
      const SideSpan& sa = a_.spans[prog][s];
      for (RegionResult& reg : r.regions) {
        const auto& va = out_a.bytes[reg.name];
        const plan::DType dt = *plan_dtype(reg.dtype);
        // A region the span reads before writing (a residual, a KV cache): measured by what the span changed.
        std::span<const uint8_t> before;
        const bool read_first = std::any_of(sa.inputs.begin(), sa.inputs.end(),
                                            [&reg](const RegionInfo& in) { return in.key == reg.name; });
        if (auto it = shadow_.find(reg.name); read_first && it != shadow_.end()) before = it->second;
        RegionDiff dr = compare_region(dt, va, out_r.bytes[reg.name], cfg_.tol, before);
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