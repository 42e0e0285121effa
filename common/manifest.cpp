// Lookups on the manifest model (SPEC §3).
#include "common/manifest.h"

namespace kern {
namespace {

template <typename T>
const T* find_named(const std::vector<T>& items, std::string_view name) {
  for (const auto& item : items) {
    if (item.name == name) return &item;
  }
  return nullptr;
}

}  // namespace

std::string_view buffer_class_name(BufferClass c) {
  switch (c) {
    case BufferClass::kInput: return "input";
    case BufferClass::kOutput: return "output";
    case BufferClass::kWeight: return "weight";
    case BufferClass::kWorkspace: return "workspace";
    case BufferClass::kCarry: return "carry";
  }
  return "workspace";
}

std::optional<BufferClass> parse_buffer_class(std::string_view s) {
  for (auto c : {BufferClass::kInput, BufferClass::kOutput, BufferClass::kWeight, BufferClass::kWorkspace,
                 BufferClass::kCarry}) {
    if (buffer_class_name(c) == s) return c;
  }
  return std::nullopt;
}

const Symbol* Manifest::find_symbol(std::string_view name) const { return find_named(symbols, name); }
const State* Manifest::find_state(std::string_view name) const { return find_named(states, name); }
const Buffer* Manifest::find_buffer(std::string_view name) const { return find_named(buffers, name); }
const Kernel* Manifest::find_kernel(std::string_view name) const { return find_named(kernels, name); }
const Program* Manifest::find_program(std::string_view name) const { return find_named(programs, name); }

const Scratch* Kernel::find_scratch(std::string_view scratch_name) const {
  return find_named(scratch, scratch_name);
}

}  // namespace kern
