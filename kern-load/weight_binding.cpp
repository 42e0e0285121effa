// Binding weight buffers to safetensors tensors by name (weight_binding.h).
#include "kern-load/weight_binding.h"

#include <set>

#include "common/terminal_text.h"
#include "kern-load/plan_expr.h"

namespace kern::load {

namespace {

std::vector<uint64_t> buffer_shape(const plan::Buffer& b, const plan::Plan& p) {
  std::vector<uint64_t> shape;
  // Validated: single-node chains whose values fit (max_size_bytes matched).
  for (const auto* d : *b.shape()) shape.push_back(evaluate_chain_at_max(*d, p).value_or(0));
  return shape;
}

}  // namespace

std::string shape_to_string(std::span<const uint64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Status check_weights(const plan::Plan& p, const Safetensors* weights) {
  size_t needed = 0;
  for (const auto* b : *p.buffers()) needed += b->class_() == plan::BufferClass::weight;
  if (weights == nullptr) {
    if (needed == 0) return {};
    return make_error(ErrorKind::kWeight, "the plan binds " + std::to_string(needed) +
                                              " weight buffers but no weights file was given");
  }
  for (const auto* b : *p.buffers()) {
    if (b->class_() != plan::BufferClass::weight) continue;
    std::string name = b->name()->str();
    auto bad = [&](const std::string& what) {
      return make_error(ErrorKind::kWeight, weights->path() + ": weight '" + terminal_safe(name) + "' " + what);
    };
    const SafetensorsTensor* t = weights->find(name);
    if (t == nullptr) return bad("is missing (the plan's buffer of class weight has no tensor of that name)");
    if (static_cast<uint8_t>(t->dtype) != static_cast<uint8_t>(b->dtype()))
      return bad("has dtype " + std::string(dtype_safetensors_name(t->dtype)) + " (" + std::string(dtype_name(t->dtype)) +
                 "), the plan expects " + plan_dtype_name(b->dtype()));
    std::vector<uint64_t> want = buffer_shape(*b, p);
    if (t->shape != want)
      return bad("has shape " + shape_to_string(t->shape) + ", the plan expects " + shape_to_string(want));
  }
  return {};
}

Result<WeightBindingReport> bind_weights(const plan::Plan& p, const Safetensors* weights, Device& device,
                                         std::span<DevicePtr> buffer_addresses,
                                         const std::function<void(uint64_t, uint64_t)>* progress, bool in_place,
                                         const WeightAllocator* allocate) {
  KERN_RETURN_IF_ERROR(check_weights(p, weights));
  WeightBindingReport report;
  if (weights == nullptr) return report;
  uint64_t total_bytes = 0;
  if (progress != nullptr)
    for (const auto* b : *p.buffers())
      if (b->class_() == plan::BufferClass::weight) total_bytes += weights->find(b->name()->string_view())->data.size();
  std::set<std::string_view> used;
  for (flatbuffers::uoffset_t i = 0; i < p.buffers()->size(); ++i) {
    const auto* b = p.buffers()->Get(i);
    if (b->class_() != plan::BufferClass::weight) continue;
    const SafetensorsTensor* t = weights->find(b->name()->string_view());
    used.insert(t->name);
    if (t->data.empty()) continue;
    const uint64_t size = t->data.size();
    std::optional<DevicePtr> view;
    if (in_place) view = device.host_view(t->data.data(), size, plan_dtype_size(b->dtype()));
    if (view) {
      buffer_addresses[i] = *view;
      report.bytes_in_place += size;
    } else {
      if (buffer_addresses[i] == 0 && allocate != nullptr) {
        KERN_ASSIGN_OR_RETURN(auto ptr, (*allocate)(i, size), "binding weight '" + t->name + "'");
        buffer_addresses[i] = ptr;
      }
      if (buffer_addresses[i] == 0)
        return make_error(ErrorKind::kDevice, "binding weight '" + t->name + "': the buffer has no allocation");
      KERN_RETURN_IF_ERROR(device.copy_to_device(buffer_addresses[i], t->data.data(), size),
                           "binding weight '" + t->name + "'");
      report.bytes_copied += size;
    }
    if (progress != nullptr) (*progress)(report.bytes_copied + report.bytes_in_place, total_bytes);
  }
  for (const auto& t : weights->tensors())
    if (used.count(t.name) == 0) report.unused_tensors.push_back(t.name);
  return report;
}

}  // namespace kern::load
