// The .kplan checksum trailer (docs/plan-format.md "Checksum"): kern-verify
// appends it to the finished FlatBuffers buffer and kern-load checks it at
// open, before any other byte of the plan is trusted, so a flipped, cut or
// appended byte is rejected instead of being read as a plan that lies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/result.h"

namespace kern {

/// The 8 bytes that start the trailer.
inline constexpr char kPlanTrailerMagic[9] = "KPLNSUM1";
/// Trailer size in bytes: the magic, then sha256 of every byte before the
/// digest (the FlatBuffers body and the magic).
inline constexpr size_t kPlanTrailerBytes = 8 + 32;

/// The trailer to append to the finished FlatBuffers plan `body`.
/// Errors (kIo) only if OpenSSL fails.
Result<std::array<uint8_t, kPlanTrailerBytes>> plan_trailer(std::span<const uint8_t> body);

/// Checks the trailer of a whole plan file `file` (named `name` in errors)
/// and returns the FlatBuffers body before it (`name` empty: no prefix). Errors (kManifest): no
/// trailer ("written by an older kern-verify or cut short"), or a digest
/// that does not match (the file changed after kern-verify wrote it).
Result<std::span<const uint8_t>> check_plan_trailer(std::span<const uint8_t> file, const std::string& name);

}  // namespace kern
