// A variable-size all-gather over a rank's collective endpoint: every rank
// gives its own bytes (any size, up to a bound) and gets every rank's. The
// collective's all-gather takes one size on every rank, so this is two of
// them: the sizes, then each rank's bytes padded to the largest.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"
#include "kernels-src/cpu/collective.h"

namespace kern::run {

/// Returns every rank's bytes, indexed by rank (this rank's `mine`
/// included). Every rank of `collective` must call it at the same point.
/// `what` names the message in errors. Errors (kUsage): `mine` larger than
/// `max_bytes`; (kDevice) a peer's size above `max_bytes` (its bytes are
/// untrusted), and the all-gathers' own (a rank that left or did not
/// answer within the transport's timeout).
Result<std::vector<std::vector<uint8_t>>> all_gather_bytes(cpu::Collective& collective,
                                                           std::span<const uint8_t> mine, uint64_t max_bytes,
                                                           const char* what);

}  // namespace kern::run
