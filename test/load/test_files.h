// Test helper: a scratch directory removed at scope exit, whole-file writes,
// and a safetensors writer taking the header JSON verbatim (so malformed
// headers can be written too).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace kern::test {

/// A fresh directory under the system temp dir; removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kern-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// `name` inside the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_bytes(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// Bytes of a safetensors file: 8-byte LE `header_len` (default: the JSON's
/// length), the JSON, then `data`.
inline std::vector<uint8_t> safetensors_bytes(const std::string& header_json, std::span<const uint8_t> data,
                                              uint64_t header_len = UINT64_MAX) {
  if (header_len == UINT64_MAX) header_len = header_json.size();
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(header_len >> (8 * i)));
  out.insert(out.end(), header_json.begin(), header_json.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// Little-endian bytes of i64 values.
inline std::vector<uint8_t> i64_bytes(std::initializer_list<int64_t> values) {
  std::vector<uint8_t> out;
  for (int64_t v : values)
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  return out;
}

}  // namespace kern::test
