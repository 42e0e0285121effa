// Plan file constants shared by the writer (kern-verify) and the reader
// (kern-load). The FlatBuffers schema is schemas/plan.fbs (SPEC §5).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "schemas/plan_generated.h"

namespace kern {

/// Plan format version written into Plan.format_version; a loader refuses any
/// other value. Bump it on any change an older loader would misread.
/// Version 2: the file ends with the checksum trailer (common/plan_checksum.h).
/// Version 3: Plan.arena and arena_offset, the static memory plan (docs/memory-plan.md).
inline constexpr uint32_t kPlanFormatVersion = 3;

/// FlatBuffers file identifier of a .kplan (bytes 4..7 of the file).
inline constexpr const char* kPlanFileIdentifier = "KPLN";

/// Plan.format_version read from a shallow check of the root table alone
/// (nullopt when even that is unreadable): a plan of another version may not
/// pass this version's full Verifier, and "wrong version" is the message its
/// user needs. `bytes` must be at least 8 bytes.
inline std::optional<uint32_t> shallow_plan_format_version(std::span<const uint8_t> bytes) {
  flatbuffers::Verifier shallow(bytes.data(), bytes.size(), 2, 1);
  const auto* root = shallow.VerifyOffset(0) ? flatbuffers::GetRoot<flatbuffers::Table>(bytes.data()) : nullptr;
  if (root == nullptr || !root->VerifyTableStart(shallow) ||
      !root->VerifyField<uint32_t>(shallow, plan::Plan::VT_FORMAT_VERSION, 4))
    return std::nullopt;
  return root->GetField<uint32_t>(plan::Plan::VT_FORMAT_VERSION, 0);
}

/// The largest state alignment, in bytes, that kern-verify accepts (E0104)
/// and the loader allows: one 4 KiB page. Device allocations are 256 B
/// aligned and no kernel needs more than a page; a larger value (say 2^63)
/// would only make rounding a size up wrap u64 or fail as "out of memory".
inline constexpr uint64_t kMaxStateAlign = 4096;

}  // namespace kern
