// libFuzzer target: the safetensors header reader (kern-load
// Safetensors::open) on arbitrary header bytes. The input is the JSON header;
// the target frames it as a file (8-byte little-endian length, the header,
// a 64 KiB data section) in a memfd and opens it through /proc/self/fd, the
// way kern-run opens --weights. Every input must be rejected with an error or
// accepted with tensors inside the data section; never a crash, an
// out-of-bounds read or deep recursion. Built by test/fuzz/build.sh.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kern-load/safetensors.h"

namespace {

constexpr size_t kDataBytes = 64 * 1024;

int memfd() {
  static const int fd = ::memfd_create("safetensors_fuzz", MFD_CLOEXEC);
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd();
  if (fd < 0) return 0;
  std::vector<uint8_t> file(8 + size + kDataBytes, 0);
  uint64_t len = size;
  for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<uint8_t>(len >> (8 * i));
  if (size > 0) std::memcpy(file.data() + 8, data, size);
  for (size_t i = 0; i < kDataBytes; ++i) file[8 + size + i] = static_cast<uint8_t>(i * 31);
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, file.data(), file.size(), 0) != static_cast<ssize_t>(file.size()))
    return 0;
  auto st = kern::load::Safetensors::open("/proc/self/fd/" + std::to_string(fd));
  if (!st.ok()) return 0;
  // Every tensor the reader accepted lies inside the data section: read it all.
  uint64_t sum = 0;
  for (const auto& t : st->tensors())
    for (uint8_t b : t.data) sum += b;
  volatile uint64_t sink = sum;
  (void)sink;
  return 0;
}
