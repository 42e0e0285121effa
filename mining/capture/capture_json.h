// Small JSON text helpers for the capture's records (one object per line).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kern::capture {

/// `s` as a JSON string literal (quotes included; control bytes escaped).
std::string json_string(const std::string& s);
/// Lower-case hex of `n` bytes (2 characters per byte), unquoted.
std::string hex_bytes(const void* data, size_t n);
/// "0x..." (lower-case hex) as a JSON string literal: addresses and handles.
std::string json_address(uint64_t v);

}  // namespace kern::capture
