// Weight binding: weights are matched by name with dtype and shape checked;
// extra tensors are reported, not rejected.
#include <catch2/catch.hpp>

#include "kern-load/cpu_device.h"
#include "kern-load/weight_binding.h"
#include "test/load/fake_kernels.h"
#include "test/load/plan_builder.h"
#include "test/load/test_files.h"

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;

namespace {

struct Fixture {
  TempDir dir;
  std::vector<uint8_t> plan_bytes = serialize(tiny_plan());
  load::PlanFile plan = std::move(load::PlanFile::from_bytes(plan_bytes, "tiny.kplan").value());

  Result<load::Safetensors> weights(const std::string& header, std::span<const uint8_t> data) {
    std::string path = dir.file("w.safetensors");
    write_bytes(path, safetensors_bytes(header, data));
    return load::Safetensors::open(path);
  }
};

}  // namespace

TEST_CASE("weight binding copies each weight into its buffer and lists unused tensors", "[load][weights]") {
  Fixture f;
  auto bias = i64_bytes({10, 20, 30, 40});
  std::vector<uint8_t> data = bias;
  data.push_back(7);
  auto w = f.weights(R"({"bias":{"dtype":"I64","shape":[4],"data_offsets":[0,32]},)"
                     R"("extra":{"dtype":"U8","shape":[1],"data_offsets":[32,33]}})",
                     data);
  REQUIRE(w.ok());
  load::CpuDevice device(&fake_kernel);
  std::vector<load::DevicePtr> addrs(4, 0);
  auto p = device.allocate(32, 256);
  REQUIRE(p.ok());
  addrs[1] = *p;
  auto r = load::bind_weights(f.plan.plan(), &w.value(), device, addrs);
  REQUIRE(r.ok());
  CHECK(r->bytes_copied == 32);
  CHECK(r->unused_tensors == std::vector<std::string>{"extra"});
  std::vector<uint8_t> back(32);
  REQUIRE(device.copy_to_host(back.data(), addrs[1], 32).ok());
  CHECK(back == bias);
}

TEST_CASE("a missing weight is an error naming the weight", "[load][weights]") {
  Fixture f;
  auto w = f.weights(R"({"other":{"dtype":"I64","shape":[4],"data_offsets":[0,32]}})", i64_bytes({1, 2, 3, 4}));
  REQUIRE(w.ok());
  Status s = load::check_weights(f.plan.plan(), &w.value());
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kWeight);
  CHECK(s.error().message == w->path() + ": weight 'bias' is missing (the plan's buffer of class weight has no "
                                         "tensor of that name)");
}

TEST_CASE("a weight of the wrong dtype is an error naming both dtypes", "[load][weights]") {
  Fixture f;
  auto w = f.weights(R"({"bias":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::vector<uint8_t>(16));
  REQUIRE(w.ok());
  Status s = load::check_weights(f.plan.plan(), &w.value());
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == w->path() + ": weight 'bias' has dtype F32 (f32), the plan expects i64");
}

TEST_CASE("a weight of the wrong shape is an error naming both shapes", "[load][weights]") {
  Fixture f;
  auto w = f.weights(R"({"bias":{"dtype":"I64","shape":[2,2],"data_offsets":[0,32]}})", i64_bytes({1, 2, 3, 4}));
  REQUIRE(w.ok());
  Status s = load::check_weights(f.plan.plan(), &w.value());
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == w->path() + ": weight 'bias' has shape [2, 2], the plan expects [4]");
}

TEST_CASE("a plan with weights and no weights file is an error counting them", "[load][weights]") {
  Fixture f;
  Status s = load::check_weights(f.plan.plan(), nullptr);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "the plan binds 1 weight buffers but no weights file was given");
}
