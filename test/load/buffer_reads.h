// Test helper: reading a loaded Executable's buffers back as typed values
// (kern_load_test's files share it: one definition, so the executable can be
// a unity build).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "kern-load/executable.h"

namespace kern::test {

/// The first `n` int64 elements (8n bytes) of buffer index `buffer` of
/// `exe`, read from its device; REQUIREs the read to succeed.
inline std::vector<int64_t> read_i64(load::Executable& exe, uint32_t buffer, size_t n) {
  std::vector<int64_t> v(n);
  REQUIRE(exe.read_buffer(buffer, std::span(reinterpret_cast<uint8_t*>(v.data()), n * 8)).ok());
  return v;
}

}  // namespace kern::test
