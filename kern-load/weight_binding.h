// Binding `weight` buffers to safetensors tensors by name (SPEC §6): every
// weight buffer of the plan must exist in the file with the same dtype and
// shape; extra tensors in the file are allowed and reported as notes. The
// bytes are copied into the buffer's device allocation.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/plan_format.h"
#include "common/result.h"
#include "kern-load/device.h"
#include "kern-load/safetensors.h"

namespace kern::load {

/// What binding did: bytes copied and the file's tensors no buffer used.
struct WeightBindingReport {
  uint64_t bytes_copied = 0;
  std::vector<std::string> unused_tensors;  ///< in file order
};

/// Checks every weight buffer of `p` against `weights` without copying.
/// Errors (kind kWeight), naming the file and the weight:
/// missing ("... weight 'lm_head.weight' is missing"), dtype mismatch (both
/// dtypes), shape mismatch (both shapes, e.g. "[151936, 2560]").
/// `weights` may be null when the plan has no weight buffers (else an error).
Status check_weights(const plan::Plan& p, const Safetensors* weights);

/// check_weights, then copies each weight's bytes to `buffer_addresses[i]`
/// (indexed like Plan.buffers) on `device`. Device errors get the weight's
/// name as context. `progress` (borrowed, may be null) is called after each
/// copied tensor with (bytes copied so far, total weight bytes).
Result<WeightBindingReport> bind_weights(const plan::Plan& p, const Safetensors* weights, Device& device,
                                         std::span<const DevicePtr> buffer_addresses,
                                         const std::function<void(uint64_t, uint64_t)>* progress = nullptr);

/// "[a, b, c]" for messages.
std::string shape_to_string(std::span<const uint64_t> shape);

}  // namespace kern::load
