// Plan file constants shared by the writer (kern-verify) and the reader
// (kern-load). The FlatBuffers schema is schemas/plan.fbs (SPEC §5).
#pragma once

#include <cstdint>

#include "schemas/plan_generated.h"

namespace kern {

/// Plan format version written into Plan.format_version; a loader refuses any
/// other value. Bump it on any change an older loader would misread.
/// Version 2: the file ends with the checksum trailer (common/plan_checksum.h).
inline constexpr uint32_t kPlanFormatVersion = 2;

/// FlatBuffers file identifier of a .kplan (bytes 4..7 of the file).
inline constexpr const char* kPlanFileIdentifier = "KPLN";

}  // namespace kern
