// Appending the next step to a missing-weight error (weights_hint.h).
#include "kern-run/weights_hint.h"

#include "kern-load/plan_file.h"
#include "kern-load/safetensors.h"

namespace kern::run {

namespace {

/// The clause to append for `plan` and `weights`, or "".
std::string next_step(const load::PlanFile& plan, const load::Safetensors& weights) {
  bool hf_layout = false;
  for (const auto& t : weights.tensors()) hf_layout = hf_layout || t.name.ends_with(".self_attn.q_proj.weight");
  size_t missing = 0, missing_draft = 0;
  bool plan_fuses_qkv = false;
  for (const auto* b : *plan.plan().buffers()) {
    if (b->class_() != plan::BufferClass::weight) continue;
    const std::string_view name = b->name()->string_view();
    plan_fuses_qkv = plan_fuses_qkv || name.ends_with(".self_attn.qkv_proj.weight");
    if (weights.find(name) != nullptr) continue;
    ++missing;
    missing_draft += name.starts_with("draft.");
  }
  if (missing == 0) return "";
  if (hf_layout && plan_fuses_qkv)
    return "it is a Hugging Face checkpoint (q_proj, k_proj, v_proj apart): export it to the plan's layout first: "
           "examples/export_qwen3.py CKPT_DIR -o W.safetensors (docs/running.md)";
  if (missing_draft == missing)
    return "the file has the target's weights but none of the " + std::to_string(missing) +
           " draft weights ('draft.…') a speculative plan binds: export the target and the draft into one file: "
           "examples/export_qwen3.py CKPT_DIR --draft DRAFT_DIR --draft-config D.json -o W.safetensors, or "
           "--random-weights SEED (docs/speculative.md)";
  return "";
}

}  // namespace

Error with_weights_next_step(Error e, const std::string& plan_path, const std::string& weights_path) {
  if (e.kind != ErrorKind::kWeight || weights_path.empty()) return e;
  auto plan = load::PlanFile::open(plan_path);
  auto weights = load::Safetensors::open(weights_path);
  if (!plan.ok() || !weights.ok()) return e;
  const std::string step = next_step(*plan, *weights);
  if (!step.empty()) e.message += "; " + step;
  return e;
}

}  // namespace kern::run
