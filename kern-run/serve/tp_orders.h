// What rank 0 of `kern-run serve --tp N` tells the other ranks before each
// engine step (docs/parallel.md "serve"). Every rank runs the same
// deterministic engine; what only rank 0 knows is which HTTP requests
// arrived and which were cancelled, and when. So before each step rank 0
// broadcasts the engine calls it made since the last one (aborts, then
// admitted requests, in order) and whether to step, and every other rank
// makes the same calls, then the same step: the same ids, pages and bits.
// The orders travel over the rank's collective endpoint (Gloo all-gathers),
// on the thread that runs the plan, between steps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"
#include "kern-engine/request.h"
#include "kernels-src/cpu/collective.h"

namespace kern::run::serve {

/// One engine step's orders from rank 0.
struct StepOrders {
  enum class Kind : uint8_t {
    kIdle = 0,  ///< nothing to do: a heartbeat, so the other ranks' waits do not time out
    kStep = 1,  ///< make the calls below, then one Engine::step()
    kExit = 2,  ///< the server is stopping: end
  };
  Kind kind = Kind::kIdle;
  std::vector<engine::RequestId> aborts;  ///< Engine::abort, in order
  std::vector<engine::Request> adds;      ///< Engine::add_request, in order (after the aborts)
  bool operator==(const StepOrders&) const = default;
};

/// The orders as bytes (little-endian fixed-width fields, counts first).
std::vector<uint8_t> encode_orders(const StepOrders& orders);

/// Reads encode_orders' bytes. Errors (kDevice): truncated bytes, trailing
/// bytes, an unknown kind, or a count beyond what the bytes can hold (the
/// bytes come from another process: treated as untrusted).
Result<StepOrders> decode_orders(std::span<const uint8_t> bytes);

/// Broadcasts rank 0's `orders` to every rank of `collective` and returns
/// them (on rank 0 too); the other ranks' `orders` are ignored, and each of
/// them sends rank 0 its `report` instead (its figures, kern-run/
/// rank_figures.h), in the same variable-size all-gather
/// (kern-run/all_gather_bytes.h: two all-gathers, the sizes then the
/// bytes). With `reports`, it gets every rank's report bytes by rank, rank
/// 0's own slot empty. At most kMaxOrdersBytes a rank. Errors: the
/// all-gathers' (a rank that left or did not answer within the transport's
/// timeout, kDevice), rank 0 sending nothing, and decode_orders'.
Result<StepOrders> broadcast_orders(cpu::Collective& collective, const StepOrders& orders,
                                    std::span<const uint8_t> report = {},
                                    std::vector<std::vector<uint8_t>>* reports = nullptr);

/// The largest orders message (bytes): far above any step's (a request's
/// prompt is bounded by the plan's capacity) and a bound on what a rank
/// allocates for a peer's size.
inline constexpr uint64_t kMaxOrdersBytes = uint64_t{1} << 30;

}  // namespace kern::run::serve
