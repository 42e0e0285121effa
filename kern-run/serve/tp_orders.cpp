// Step orders between the ranks of `kern-run serve --tp N` (tp_orders.h).
#include "kern-run/serve/tp_orders.h"

#include <string>

#include "kern-run/all_gather_bytes.h"
#include "kern-run/wire_bytes.h"

namespace kern::run::serve {
namespace {

// The smallest encoded request: id, three counts, max_tokens, chunk, two
// flags and the sampling fields.
constexpr uint64_t kMinRequestBytes = 8 + 8 + 8 + 8 + 8 + 1 + 1 + 4 + 4 + 4 + 4 + 8;

}  // namespace

std::vector<uint8_t> encode_orders(const StepOrders& orders) {
  WireWriter w;
  w.put(static_cast<uint8_t>(orders.kind));
  w.put<uint64_t>(orders.aborts.size());
  for (engine::RequestId id : orders.aborts) w.put<uint64_t>(id);
  w.put<uint64_t>(orders.adds.size());
  for (const engine::Request& r : orders.adds) {
    w.put<uint64_t>(r.id);
    w.put_ids(r.prompt_ids);
    w.put<uint64_t>(r.max_tokens);
    w.put_ids(r.stop_ids);
    w.put<uint64_t>(r.chunk);
    w.put<uint8_t>(r.sync);
    w.put<uint8_t>(r.speculative);
    w.put(r.sampling.temperature);
    w.put(r.sampling.top_k);
    w.put(r.sampling.top_p);
    w.put(r.sampling.min_p);
    w.put(r.sampling.seed);
  }
  return w.take();
}

Result<StepOrders> decode_orders(std::span<const uint8_t> bytes) {
  WireReader in(bytes, "step orders");
  StepOrders o;
  uint8_t kind = 0;
  KERN_RETURN_IF_ERROR(in.get(kind, "kind"));
  if (kind > static_cast<uint8_t>(StepOrders::Kind::kExit))
    return make_error(ErrorKind::kDevice, "step orders: unknown kind " + std::to_string(kind));
  o.kind = static_cast<StepOrders::Kind>(kind);
  uint64_t n = 0;
  KERN_RETURN_IF_ERROR(in.count(n, sizeof(uint64_t), "aborts"));
  o.aborts.resize(n);
  for (auto& id : o.aborts) {
    uint64_t v = 0;
    KERN_RETURN_IF_ERROR(in.get(v, "aborts"));
    id = v;
  }
  KERN_RETURN_IF_ERROR(in.count(n, kMinRequestBytes, "adds"));
  o.adds.resize(n);
  for (engine::Request& r : o.adds) {
    uint64_t id = 0;
    uint8_t sync = 0, speculative = 0;
    KERN_RETURN_IF_ERROR(in.get(id, "request id"));
    r.id = id;
    KERN_RETURN_IF_ERROR(in.get_ids(r.prompt_ids, "prompt_ids"));
    KERN_RETURN_IF_ERROR(in.get(r.max_tokens, "max_tokens"));
    KERN_RETURN_IF_ERROR(in.get_ids(r.stop_ids, "stop_ids"));
    KERN_RETURN_IF_ERROR(in.get(r.chunk, "chunk"));
    KERN_RETURN_IF_ERROR(in.get(sync, "sync"));
    KERN_RETURN_IF_ERROR(in.get(speculative, "speculative"));
    r.sync = sync != 0;
    r.speculative = speculative != 0;
    KERN_RETURN_IF_ERROR(in.get(r.sampling.temperature, "temperature"));
    KERN_RETURN_IF_ERROR(in.get(r.sampling.top_k, "top_k"));
    KERN_RETURN_IF_ERROR(in.get(r.sampling.top_p, "top_p"));
    KERN_RETURN_IF_ERROR(in.get(r.sampling.min_p, "min_p"));
    KERN_RETURN_IF_ERROR(in.get(r.sampling.seed, "seed"));
  }
  KERN_RETURN_IF_ERROR(in.expect_done());
  return o;
}

Result<StepOrders> broadcast_orders(cpu::Collective& collective, const StepOrders& orders,
                                    std::span<const uint8_t> report, std::vector<std::vector<uint8_t>>* reports) {
  const bool root = collective.rank() == 0;
  const std::vector<uint8_t> mine =
      root ? encode_orders(orders) : std::vector<uint8_t>(report.begin(), report.end());
  KERN_ASSIGN_OR_RETURN(auto all, all_gather_bytes(collective, mine, kMaxOrdersBytes, "step orders"));
  if (all[0].empty()) return make_error(ErrorKind::kDevice, "step orders: rank 0 sent none");
  KERN_ASSIGN_OR_RETURN(StepOrders decoded, decode_orders(all[0]));
  if (reports != nullptr) {
    all[0].clear();
    *reports = std::move(all);
  }
  return decoded;
}

}  // namespace kern::run::serve
