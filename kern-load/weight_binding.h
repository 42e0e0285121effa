// Binding `weight` buffers to safetensors tensors by name (SPEC §6): every
// weight buffer of the plan must exist in the file with the same dtype and
// shape; extra tensors in the file are allowed and reported as notes. A
// device that reads host memory (cpu) uses an aligned tensor in place from
// the mapped file; otherwise the bytes are copied into a device allocation.
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

/// What binding did: bytes copied, bytes used in place and the file's
/// tensors no buffer used.
struct WeightBindingReport {
  uint64_t bytes_copied = 0;
  uint64_t bytes_in_place = 0;  ///< read by the device straight from the mapped file
  std::vector<std::string> unused_tensors;  ///< in file order
};

/// Checks every weight buffer of `p` against `weights` without copying.
/// Errors (kind kWeight), naming the file and the weight:
/// missing ("... weight 'lm_head.weight' is missing"), dtype mismatch (both
/// dtypes), shape mismatch (both shapes, e.g. "[151936, 2560]").
/// `weights` may be null when the plan has no weight buffers (else an error).
Status check_weights(const plan::Plan& p, const Safetensors* weights);

/// Gives weight buffer `buffer` (an index into Plan.buffers) its own device
/// allocation of `size_bytes` and returns its address.
using WeightAllocator = std::function<Result<DevicePtr>(uint32_t buffer, uint64_t size_bytes)>;

/// check_weights, then binds each weight buffer i (indexed like
/// Plan.buffers). With `in_place` and a device whose host_view accepts the
/// tensor's bytes (aligned to the element size), buffer_addresses[i] becomes
/// that view: no copy, no allocation; `weights` must then outlive the
/// device's use. Otherwise the bytes are copied to buffer_addresses[i],
/// which `allocate` (may be null) fills first when it is 0. Device errors
/// get the weight's name as context. `progress` (borrowed, may be null) is
/// called after each tensor with (bytes bound so far, total weight bytes).
Result<WeightBindingReport> bind_weights(const plan::Plan& p, const Safetensors* weights, Device& device,
                                         std::span<DevicePtr> buffer_addresses,
                                         const std::function<void(uint64_t, uint64_t)>* progress = nullptr,
                                         bool in_place = false, const WeightAllocator* allocate = nullptr);

/// "[a, b, c]" for messages.
std::string shape_to_string(std::span<const uint64_t> shape);

}  // namespace kern::load
