// kern-load's cuda device on the simulated driver, driven from a thread other
// than the one that created it (as a server drives the device from its own
// thread): CUDA keeps the current context per thread, so every entry point
// must make the device's context current on the calling thread first, or
// its driver calls fail with CUDA_ERROR_INVALID_CONTEXT.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kern-load/device.h"

using kern::load::Device;
using kern::load::DevicePtr;

TEST_CASE("sim cuda device: a thread that did not create the device copies, reads back and synchronises") {
  auto made = kern::load::make_cuda_device(kern::load::CudaDeviceOptions{});
  REQUIRE(made.ok());
  std::unique_ptr<Device> dev = std::move(made).value();
  REQUIRE(dev->name().find("kern simulated GPU") != std::string::npos);
  auto p = dev->allocate(64, 256);
  REQUIRE(p.ok());
  const DevicePtr buf = p.value();
  std::string failure;
  std::vector<uint8_t> got(64, 0);
  std::thread t([&] {
    std::vector<uint8_t> src(64);
    for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i + 1);
    kern::Status s = dev->copy_to_device(buf, src.data(), src.size());
    if (s.ok()) s = dev->copy_to_host(got.data(), buf, got.size());
    if (s.ok()) s = dev->read_async(0, buf, 8);
    if (s.ok()) {
      auto r = dev->wait_read(0);
      if (!r.ok()) s = r.error();
    }
    if (s.ok()) s = dev->record_mark(0);
    if (s.ok()) s = dev->synchronize();
    if (!s.ok()) failure = s.error().message;
  });
  t.join();
  INFO(failure);
  CHECK(failure.empty());
  CHECK(got[0] == 1);
  CHECK(got[63] == 64);
  REQUIRE(dev->free(buf).ok());
  CHECK(dev->close().ok());
}
