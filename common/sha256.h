// sha256 of bytes and files via OpenSSL EVP, plus hex helpers. Used to pin
// cubins (SPEC §3 step `sha256`, checked at load, SPEC §6) and to record the
// manifest's digest in a plan (SPEC §5).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kern {

/// A sha256 digest (32 bytes).
using Sha256Digest = std::array<uint8_t, 32>;

/// sha256 of `bytes`. Errors (kIo) only if OpenSSL itself fails.
Result<Sha256Digest> sha256_bytes(std::span<const uint8_t> bytes);
/// sha256 of a string's bytes.
Result<Sha256Digest> sha256_bytes(std::string_view bytes);
/// sha256 of the file at `path`, read in chunks. Errors (kIo) name the path.
Result<Sha256Digest> sha256_file(const std::string& path);

/// Lower-case hex of `bytes` (2 characters per byte).
std::string hex_encode(std::span<const uint8_t> bytes);
/// Lower-case hex of a digest (64 characters).
std::string hex_encode(const Sha256Digest& digest);
/// Decodes hex (upper or lower case, even length); nullopt when malformed.
std::optional<std::string> hex_decode(std::string_view hex);
/// Decodes exactly 64 hex digits into a digest; nullopt when malformed.
std::optional<Sha256Digest> parse_sha256_hex(std::string_view hex);

}  // namespace kern
