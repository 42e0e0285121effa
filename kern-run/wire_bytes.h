// Little-endian fixed-width fields for the messages kern-run's ranks send
// each other (serve's step orders, the per-rank figures): a writer, and a
// reader that treats the bytes as untrusted (they come from another
// process) and names the field where they end too early.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/result.h"

namespace kern::run {

/// Appends trivially copyable values as their bytes (x86-64 and aarch64
/// are little-endian, and every rank of a world runs the same binary).
class WireWriter {
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
  /// A u64 length, then the bytes.
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

/// Reads WireWriter's fields back. Every error is kDevice and starts with
/// `message` (what the bytes are, e.g. "step orders").
class WireReader {
 public:
  WireReader(std::span<const uint8_t> in, std::string message) : in_(in), message_(std::move(message)) {}
  template <typename T>
  Status get(T& v, const char* what) {
    if (in_.size() - pos_ < sizeof(T)) return truncated(what);
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return {};
  }
  /// A u64 count of items of `item_bytes` each that the rest can hold.
  Status count(uint64_t& n, uint64_t item_bytes, const char* what) {
    KERN_RETURN_IF_ERROR(get(n, what));
    if (n > (in_.size() - pos_) / item_bytes)
      return make_error(ErrorKind::kDevice,
                        message_ + ": " + what + " count " + std::to_string(n) + " exceeds the message");
    return {};
  }
  Status get_ids(std::vector<int64_t>& ids, const char* what) {
    uint64_t n = 0;
    KERN_RETURN_IF_ERROR(count(n, sizeof(int64_t), what));
    ids.resize(n);
    for (auto& id : ids) KERN_RETURN_IF_ERROR(get(id, what));
    return {};
  }
  Status get_string(std::string& s, const char* what) {
    uint64_t n = 0;
    KERN_RETURN_IF_ERROR(count(n, 1, what));
    s.assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return {};
  }
  bool done() const { return pos_ == in_.size(); }
  /// kDevice "<message>: trailing bytes" unless every byte was read.
  Status expect_done() const {
    if (done()) return {};
    return make_error(ErrorKind::kDevice, message_ + ": trailing bytes");
  }

 private:
  Status truncated(const char* what) const {
    return make_error(ErrorKind::kDevice, message_ + ": truncated at " + what + " (byte " + std::to_string(pos_) +
                                              " of " + std::to_string(in_.size()) + ")");
  }
  std::span<const uint8_t> in_;
  std::string message_;
  size_t pos_ = 0;
};

}  // namespace kern::run
