// One side of `kern-run compare` (compare_session.h): a plan loaded on a
// device, its programs cut into spans, and running one span with its written
// regions read right after their last write. The session drives three of
// these (A, B-replay, B-free); nothing here compares.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-engine/model.h"
#include "kern-load/executable.h"
#include "kern-run/compare_align.h"
#include "kern-run/compare_session.h"

namespace kern::run::compare {

inline constexpr int kPrefill = 0, kDecode = 1;
inline constexpr const char* kProgramNames[2] = {"prefill", "decode"};

/// A region a span touches, keyed by class and name ("buffer 'qkv'") so two
/// plans' regions pair up.
struct RegionInfo {
  load::RegionRef ref;
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
  const engine::CausalLmContract& contract() const { return model->contract(); }
  const plan::Plan& plan() { return exe().plan(); }
};

/// The region a launch argument points into, keyed by class and name; none
/// for weights (never written; fused plans pack them), scratch (private to a
/// kernel) and scalars. States get bf16 when per-token (kern's KV caches),
/// else exact i32 words: the plan records no state dtype.
std::optional<RegionInfo> arg_region(const plan::Plan& p, const plan::LaunchArg* a);
/// [first, end) launches of each dispatch of `program`. Errors (kManifest):
/// a dispatch's launches not contiguous and in order.
Result<std::vector<std::pair<uint32_t, uint32_t>>> dispatch_launches(const plan::Plan& p, uint32_t program);
/// Each dispatch's label ("dispatch N" when the plan has none).
std::vector<std::string> dispatch_labels(const plan::Plan& p, uint32_t program);
/// The span of launches [first, end) of `program`: what it writes (and each
/// region's last writer), what it reads before writing.
SideSpan make_side_span(const plan::Plan& p, uint32_t program, uint32_t first, uint32_t end);
/// Loads `side` with KV `capacity` tokens (no graphs), the weights as `cfg`
/// says; `device_name` receives the device's name. Errors: the plan's, the
/// device's, the weights', Executable::load's, Model::adopt's.
Result<std::unique_ptr<engine::Model>> load_side(const CompareSide& side, const CompareConfig& cfg, uint64_t capacity,
                                                 std::string* device_name);
/// Runs one span of `side`, reading each written region `want` accepts right
/// after its last write (the span runs in parts); times the launches (CUDA
/// events when the device has them, else wall time). Errors: the runs' and
/// reads'.
Result<SpanOutput> run_span(Side& side, int prog, const SideSpan& sp,
                            const std::function<bool(const RegionInfo&)>& want);
/// Fills side.spans[prog] from the aligned dispatch spans (`a_side`: their A ranges).
Status build_spans(Side& side, int prog, const std::vector<DispatchSpan>& spans, bool a_side);
/// Writes a run's inputs through the side's model runner and sets tokens = n.
Status write_step_inputs(Side& side, const int64_t* ids, uint64_t n, uint64_t pos);
/// The side's next_token[0].
Result<int64_t> read_next_token(Side& side);
/// "buffer 'NAME'" of buffer `buffer`.
std::string buffer_key(const plan::Plan& p, uint32_t buffer);

}  // namespace kern::run::compare
