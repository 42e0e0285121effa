// sha256 via OpenSSL EVP (EVP_DigestInit_ex / Update / Final_ex).
#include "common/sha256.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <openssl/evp.h>

namespace kern {
namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

Error openssl_error(const std::string& what) { return make_error(ErrorKind::kIo, "sha256: openssl " + what + " failed"); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<Sha256Digest> sha256_bytes(std::span<const uint8_t> bytes) {
  return sha256_bytes(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

Result<Sha256Digest> sha256_bytes(std::string_view bytes) {
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx) return openssl_error("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return openssl_error("EVP_DigestInit_ex");
  if (EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1) return openssl_error("EVP_DigestUpdate");
  Sha256Digest out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1 || len != out.size()) {
    return openssl_error("EVP_DigestFinal_ex");
  }
  return out;
}

Result<Sha256Digest> sha256_file(const std::string& path) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) return make_error(ErrorKind::kIo, path + ": cannot open: " + std::strerror(errno));
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx) return openssl_error("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return openssl_error("EVP_DigestInit_ex");
  std::array<char, 1 << 16> buf;
  while (true) {
    size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n > 0 && EVP_DigestUpdate(ctx.get(), buf.data(), n) != 1) return openssl_error("EVP_DigestUpdate");
    if (n < buf.size()) {
      if (std::ferror(f.get())) return make_error(ErrorKind::kIo, path + ": read error: " + std::strerror(errno));
      break;
    }
  }
  Sha256Digest out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1 || len != out.size()) {
    return openssl_error("EVP_DigestFinal_ex");
  }
  return out;
}

std::string hex_encode(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0xF];
  }
  return out;
}

std::string hex_encode(const Sha256Digest& digest) { return hex_encode(std::span<const uint8_t>(digest)); }

std::optional<std::string> hex_decode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = hex_value(hex[i]);
    int lo = hex_value(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>((hi << 4) | lo);
  }
  return out;
}

std::optional<Sha256Digest> parse_sha256_hex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  auto bytes = hex_decode(hex);
  if (!bytes) return std::nullopt;
  Sha256Digest d{};
  std::memcpy(d.data(), bytes->data(), d.size());
  return d;
}

}  // namespace kern
