// A read-only safetensors reader (https://github.com/huggingface/safetensors
// format): 8-byte little-endian header length N, N bytes of JSON, then the
// data section. The file is mmapped; tensors are views into it.
//
// Checked: header length bounded (<= kSafetensorsMaxHeaderBytes and within the
// file), JSON well-formed with no trailing bytes, each tensor's dtype known to
// kern, shape a list of non-negative integers, data_offsets [begin, end] with
// begin <= end <= data section size, byte length == dtype size x
// product(shape) (checked multiplication), no two tensors overlapping,
// `__metadata__` a string-to-string map. Not checked: the tensor values.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/result.h"
#include "kern-load/mapped_file.h"

namespace kern::load {

/// Largest accepted JSON header: 100 MB (the upstream safetensors limit).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

/// One tensor of a safetensors file.
struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kBf16;
  std::vector<uint64_t> shape;  ///< elements per dimension; empty = scalar
  std::span<const uint8_t> data;  ///< borrowed from the mapping; size in bytes
};

/// A parsed safetensors file. Move-only; tensors borrow its mapping.
class Safetensors {
 public:
  /// Maps and validates `path`. Errors: kIo (cannot open/map), kWeight
  /// (malformed header or tensor), messages starting with the path and
  /// naming the tensor ("w.safetensors: tensor 'lm_head.weight': ...").
  static Result<Safetensors> open(const std::string& path);

  /// Tensors in header order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  /// The tensor named `name`, or nullptr.
  const SafetensorsTensor* find(std::string_view name) const;
  /// The `__metadata__` map (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return file_.path(); }

 private:
  static Result<Safetensors> parse(MappedFile file);

  MappedFile file_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t> by_name_;  ///< name -> index in tensors_
  std::map<std::string, std::string> metadata_;
};

}  // namespace kern::load
