// sha256 (FIPS 180-2 test vectors) and hex helpers.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "common/sha256.h"

namespace kern {
namespace {

TEST_CASE("sha256 of bytes matches the FIPS 180-2 vectors", "[sha256]") {
  CHECK(hex_encode(sha256_bytes(std::string_view("")).value()) ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex_encode(sha256_bytes(std::string_view("abc")).value()) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex_encode(sha256_bytes(std::string_view("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).value()) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("sha256 of a file equals sha256 of its bytes, across read chunks", "[sha256]") {
  std::string data(200000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) & 0xFF);
  std::string path = "sha256_test_file.bin";
  {
    std::ofstream f(path, std::ios::binary);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  auto from_file = sha256_file(path);
  REQUIRE(from_file.ok());
  CHECK(*from_file == sha256_bytes(std::string_view(data)).value());
  std::remove(path.c_str());
}

TEST_CASE("sha256 of a missing file is an io error naming the path", "[sha256]") {
  auto r = sha256_file("no/such/file.cubin");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kIo);
  CHECK(r.error().message == "no/such/file.cubin: cannot open: No such file or directory");
}

TEST_CASE("hex decode accepts both cases and rejects malformed input", "[sha256][hex]") {
  CHECK(hex_decode("00ff7Fa0") == std::optional<std::string>(std::string("\x00\xff\x7f\xa0", 4)));
  CHECK(hex_decode("") == std::optional<std::string>(""));
  CHECK_FALSE(hex_decode("abc").has_value());
  CHECK_FALSE(hex_decode("zz").has_value());
  CHECK_FALSE(hex_decode("0g").has_value());
  const std::string hex = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
  auto d = parse_sha256_hex(hex);
  REQUIRE(d.has_value());
  CHECK(*d == sha256_bytes(std::string_view("abc")).value());
  CHECK_FALSE(parse_sha256_hex(hex.substr(1)).has_value());
  CHECK_FALSE(parse_sha256_hex(hex + "00").has_value());
  CHECK_FALSE(parse_sha256_hex(std::string(63, '0') + "x").has_value());
}

}  // namespace
}  // namespace kern
