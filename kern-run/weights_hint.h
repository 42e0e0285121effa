// The next step for a weights file that lacks a plan's weights (issue 25):
// kern-load says which weight is missing; kern-run, which knows the Qwen3
// export layout (docs/causal-lm-manifest.md), adds what to run instead.
#pragma once

#include <string>

#include "common/result.h"

namespace kern::run {

/// For an error `e` of loading `plan_path` with `weights_path`: when `e` is
/// a missing-weight error (kWeight) and the file is a Hugging Face Qwen3
/// checkpoint (it has `…self_attn.q_proj.weight` where the plan binds
/// `…self_attn.qkv_proj.weight`), `e` with "; it is a Hugging Face
/// checkpoint: export it first: examples/export_qwen3.py CKPT_DIR -o
/// W.safetensors" appended; when every weight the file lacks is a draft
/// weight (`draft.…`, a speculative plan given the target's weights only),
/// with the draft export appended (docs/speculative.md). Else `e` unchanged.
/// Re-reads both files' headers (an error path only).
Error with_weights_next_step(Error e, const std::string& plan_path, const std::string& weights_path);

}  // namespace kern::run
