// Step orders between the ranks of `kern-run serve --tp N` (tp_orders.h).
#include "kern-run/serve/tp_orders.h"

#include <cstring>
#include <string>
#include <type_traits>

namespace kern::run::serve {
namespace {

class Writer {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_ids(const std::vector<int64_t>& ids) {
    put<uint64_t>(ids.size());
    for (int64_t id : ids) put(id);
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <typename T>
  Status get(T& v, const char* what) {
    if (in_.size() - pos_ < sizeof(T)) return truncated(what);
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return {};
  }
  /// A count of items of `item_bytes` each that the rest can hold.
  Status count(uint64_t& n, uint64_t item_bytes, const char* what) {
    KERN_RETURN_IF_ERROR(get(n, what));
    if (n > (in_.size() - pos_) / item_bytes)
      return make_error(ErrorKind::kDevice, std::string("step orders: ") + what + " count " + std::to_string(n) +
                                                " exceeds the message");
    return {};
  }
  Status get_ids(std::vector<int64_t>& ids, const char* what) {
    uint64_t n = 0;
    KERN_RETURN_IF_ERROR(count(n, sizeof(int64_t), what));
    ids.resize(n);
    for (auto& id : ids) KERN_RETURN_IF_ERROR(get(id, what));
    return {};
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  Status truncated(const char* what) const {
    return make_error(ErrorKind::kDevice, std::string("step orders: truncated at ") + what + " (byte " +
                                              std::to_string(pos_) + " of " + std::to_string(in_.size()) + ")");
  }
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

// The smallest encoded request: id, three counts, max_tokens, chunk, two
// flags and the sampling fields.
constexpr uint64_t kMinRequestBytes = 8 + 8 + 8 + 8 + 8 + 1 + 1 + 4 + 4 + 4 + 4 + 8;

}  // namespace

std::vector<uint8_t> encode_orders(const StepOrders& orders) {
  Writer w;
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
  Reader in(bytes);
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
  if (!in.done()) return make_error(ErrorKind::kDevice, "step orders: trailing bytes");
  return o;
}

Result<StepOrders> broadcast_orders(cpu::Collective& collective, const StepOrders& orders) {
  const bool root = collective.rank() == 0;
  const std::vector<uint8_t> mine = root ? encode_orders(orders) : std::vector<uint8_t>{};
  if (mine.size() > kMaxOrdersBytes)
    return make_error(ErrorKind::kUsage, "step orders of " + std::to_string(mine.size()) + " bytes exceed " +
                                             std::to_string(kMaxOrdersBytes));
  const uint64_t my_size = mine.size();
  std::vector<uint64_t> sizes(collective.world());
  KERN_RETURN_IF_ERROR(collective.all_gather(&my_size, sizes.data(), sizeof(uint64_t)), "step orders");
  const uint64_t size = sizes[0];
  if (size == 0 || size > kMaxOrdersBytes)
    return make_error(ErrorKind::kDevice, "step orders: rank 0 sent a size of " + std::to_string(size) + " bytes");
  std::vector<uint8_t> in(size, 0);
  if (root) in = mine;
  std::vector<uint8_t> all(size * collective.world());
  KERN_RETURN_IF_ERROR(collective.all_gather(in.data(), all.data(), size), "step orders");
  return decode_orders(std::span<const uint8_t>(all.data(), size));
}

}  // namespace kern::run::serve
