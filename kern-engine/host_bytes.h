// The bytes of a host value or array, as ModelRunner hands them to
// Executable::write_input (model_runner.cpp, model_runner_batch.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace kern::engine {

/// The `n` bytes at `p` as a read-only span (no copy; `p` must outlive it).
/// One definition for both model runner files: in a unity build they share a
/// translation unit (docs/test-suite.md).
inline std::span<const uint8_t> as_bytes(const void* p, size_t n) { return {static_cast<const uint8_t*>(p), n}; }

}  // namespace kern::engine
