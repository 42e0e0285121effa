// --device parsing and selection (SPEC §10): the driver is probed with
// dlopen, never linked, so these run on machines without a GPU.
#include <catch2/catch.hpp>

#include "kern-load/device_select.h"

using namespace kern;

TEST_CASE("device choices parse from auto, cpu and cuda and nothing else", "[load][device]") {
  CHECK(load::parse_device_choice("auto").value() == load::DeviceChoice::kAuto);
  CHECK(load::parse_device_choice("cpu").value() == load::DeviceChoice::kCpu);
  CHECK(load::parse_device_choice("cuda").value() == load::DeviceChoice::kCuda);
  auto bad = load::parse_device_choice("CUDA");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::kUsage);
  CHECK(bad.error().message == "unknown device 'CUDA' (expected auto, cpu or cuda)");
}

TEST_CASE("the cpu choice gives the cpu reference device without probing CUDA", "[load][device]") {
  std::string note;
  auto d = load::select_device(load::DeviceChoice::kCpu, &note);
  REQUIRE(d.ok());
  CHECK(d.value()->name() == "cpu");
  CHECK(note.empty());
}

TEST_CASE("auto without a usable CUDA device falls back to cpu and explains why", "[load][device]") {
  auto probe = load::probe_cuda_devices();
  std::string note;
  auto d = load::select_device(load::DeviceChoice::kAuto, &note);
  REQUIRE(d.ok());
  if (d.value()->name() == "cpu") {
    CHECK_THAT(note, Catch::Matchers::EndsWith("; using the cpu reference device (--device cpu skips this note)"));
    CHECK(note.size() < 120);  // one short line
    if (!probe.ok())
      CHECK(note == "no CUDA driver; using the cpu reference device (--device cpu skips this note)");
  } else {
    CHECK(probe.ok());
    CHECK(note.empty());
  }
}
