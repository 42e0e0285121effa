// The capture's image sizes (mining/capture/capture_image.h): a real fatbin
// from the build (its whole file), the fatbin wrapper nvcc embeds, an ELF64
// cubin whose furthest byte is a section's, PTX text, an unknown image.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "mining/capture/capture_image.h"

using kern::capture::image_extent;

namespace {

std::vector<char> read_fatbin() {
  const char* dir = std::getenv("KERN_CUDA_KERNELS_DIR");
  REQUIRE(dir != nullptr);
  std::ifstream f(std::string(dir) + "/rmsnorm.fatbin", std::ios::binary);
  REQUIRE(f.good());
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

template <typename T>
void put(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

}  // namespace

TEST_CASE("capture image: a fatbin spans its header and payload, exactly the file nvcc wrote") {
  std::vector<char> file = read_fatbin();
  file.resize(file.size() + 64, 'x');  // bytes after the image are not part of it
  const auto e = image_extent(file.data());
  CHECK(e.kind == "fatbin");
  CHECK(e.bytes == file.size() - 64);
  CHECK(e.data == file.data());

  struct {
    int magic, version;
    const void* data;
    void* filename;
  } wrapper{0x466243B1, 1, file.data(), nullptr};
  const auto w = image_extent(&wrapper);
  CHECK(w.kind == "fatbin");
  CHECK(w.bytes == file.size() - 64);
  CHECK(w.data == file.data());
}

TEST_CASE("capture image: an ELF64 cubin ends at its furthest section or header table") {
  std::vector<uint8_t> elf(1024, 0);
  const uint8_t ident[] = {0x7F, 'E', 'L', 'F', 2, 1, 1};
  std::memcpy(elf.data(), ident, sizeof ident);
  put<uint64_t>(elf, 0x20, 0);      // no program headers
  put<uint64_t>(elf, 0x28, 128);    // section headers at 128
  put<uint16_t>(elf, 0x36, 56);
  put<uint16_t>(elf, 0x38, 0);
  put<uint16_t>(elf, 0x3A, 64);
  put<uint16_t>(elf, 0x3C, 3);      // 3 section headers: [128, 320)
  // Section 1: PROGBITS at 400, 200 bytes -> ends at 600, the furthest.
  put<uint32_t>(elf, 128 + 64 + 4, 1);
  put<uint64_t>(elf, 128 + 64 + 0x18, 400);
  put<uint64_t>(elf, 128 + 64 + 0x20, 200);
  // Section 2: NOBITS claiming 10000 bytes at 600 occupies no file bytes.
  put<uint32_t>(elf, 128 + 128 + 4, 8);
  put<uint64_t>(elf, 128 + 128 + 0x18, 600);
  put<uint64_t>(elf, 128 + 128 + 0x20, 10000);
  const auto e = image_extent(elf.data());
  CHECK(e.kind == "cubin");
  CHECK(e.bytes == 600);
}

TEST_CASE("capture image: PTX is its NUL-terminated text; anything else is unknown") {
  const char ptx[] = "//\n.version 8.0\n.target sm_90\n.address_size 64\n";
  const auto p = image_extent(ptx);
  CHECK(p.kind == "ptx");
  CHECK(p.bytes == sizeof ptx);
  const char junk[] = "not a kernel image";
  const auto j = image_extent(junk);
  CHECK(j.kind.empty());
  CHECK(j.bytes == 0);
  CHECK(image_extent(nullptr).kind.empty());
}
