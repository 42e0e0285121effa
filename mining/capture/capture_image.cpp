// Image sizes from fatbin and ELF headers (capture_image.h).
#include "mining/capture/capture_image.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace kern::capture {

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint32_t kFatbinWrapperMagic = 0x466243B1u;

template <typename T>
T read_at(const uint8_t* p, size_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof v);
  return v;
}

/// ELF64 little-endian: the furthest byte any header or section reaches.
size_t elf_bytes(const uint8_t* p) {
  const uint64_t phoff = read_at<uint64_t>(p, 0x20), shoff = read_at<uint64_t>(p, 0x28);
  const uint16_t phentsize = read_at<uint16_t>(p, 0x36), phnum = read_at<uint16_t>(p, 0x38);
  const uint16_t shentsize = read_at<uint16_t>(p, 0x3A), shnum = read_at<uint16_t>(p, 0x3C);
  uint64_t end = 64;  // the ELF header itself
  end = std::max<uint64_t>(end, phoff + uint64_t(phentsize) * phnum);
  end = std::max<uint64_t>(end, shoff + uint64_t(shentsize) * shnum);
  if (shentsize >= 64) {
    for (uint16_t i = 0; i < shnum; ++i) {
      const uint8_t* sh = p + shoff + uint64_t(i) * shentsize;
      const uint32_t type = read_at<uint32_t>(sh, 4);
      const uint64_t offset = read_at<uint64_t>(sh, 0x18), size = read_at<uint64_t>(sh, 0x20);
      if (type != 8 /* SHT_NOBITS */) end = std::max(end, offset + size);
    }
  }
  return static_cast<size_t>(end);
}

}  // namespace

ImageExtent image_extent(const void* image) {
  ImageExtent out;
  if (image == nullptr) return out;
  const auto* p = static_cast<const uint8_t*>(image);
  uint32_t magic = read_at<uint32_t>(p, 0);
  if (magic == kFatbinWrapperMagic) {  // __fatBinC_Wrapper_t {int magic, version; const void* data; void* filename}
    p = static_cast<const uint8_t*>(read_at<const void*>(p, 8));
    if (p == nullptr) return out;
    magic = read_at<uint32_t>(p, 0);
  }
  out.data = p;
  if (magic == kFatbinMagic) {
    out.kind = "fatbin";
    out.bytes = size_t(read_at<uint16_t>(p, 6)) + size_t(read_at<uint64_t>(p, 8));
  } else if (p[0] == 0x7F && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' && p[4] == 2 /* ELFCLASS64 */) {
    out.kind = "cubin";
    out.bytes = elf_bytes(p);
  } else if (std::strstr(reinterpret_cast<const char*>(p), ".version") != nullptr) {
    // Anything else must be PTX, which CUDA requires to be NUL-terminated.
    out.kind = "ptx";
    out.bytes = std::strlen(reinterpret_cast<const char*>(p)) + 1;
  }
  return out;
}

}  // namespace kern::capture
