// The cpu device's memory-extent checks (kern-load/cpu_device.cpp): a plan
// whose literal or offset lies about a buffer gets an error naming the
// program, dispatch, step (kernel), param and buffer, and the kernel does
// not run; pointers outside every allocation are rejected.
#include <catch2/catch.hpp>

#include "kern-load/cpu_device.h"
#include "kern-load/executable.h"
#include "test/load/fake_kernels.h"
#include "test/load/plan_builder.h"
#include "test/load/test_files.h"

using namespace kern;
using namespace kern::test;

namespace {

struct CpuLoaded {
  TempDir dir;
  std::unique_ptr<load::Safetensors> weights;
  std::unique_ptr<load::Executable> exe;
};

/// Loads `d` on a CpuDevice with the fake kernels, bias = {10, 20, 30, 40}.
std::unique_ptr<CpuLoaded> load_on_cpu(const PlanDesc& d) {
  auto out = std::make_unique<CpuLoaded>();
  std::string wpath = out->dir.file("w.safetensors");
  write_bytes(wpath, safetensors_bytes(R"({"bias":{"dtype":"I64","shape":[4],"data_offsets":[0,32]}})",
                                       i64_bytes({10, 20, 30, 40})));
  auto w = load::Safetensors::open(wpath);
  REQUIRE(w.ok());
  out->weights = std::make_unique<load::Safetensors>(std::move(w.value()));
  auto plan = load::PlanFile::from_bytes(serialize(d), "tiny.kplan");
  REQUIRE(plan.ok());
  auto exe = load::Executable::load(std::move(plan.value()), std::make_unique<load::CpuDevice>(&fake_kernel),
                                    out->weights.get(), load::ExecutableOptions{16, ""}, nullptr);
  INFO((exe.ok() ? std::string() : exe.error().message));
  REQUIRE(exe.ok());
  out->exe = std::move(exe.value());
  return out;
}

}  // namespace

TEST_CASE("a lying size literal is an extent error naming dispatch, kernel, param and buffer; nothing runs",
          "[load][extents]") {
  PlanDesc d = tiny_plan();
  d.programs[0].launches[0].args[3] = arg_literal(100);  // n = 100 into 8-row buffers
  auto l = load_on_cpu(d);
  load::Executable& exe = *l->exe;
  REQUIRE(exe.write_input(0, i64_bytes({1, 2, 3})).ok());
  const uint64_t tokens[] = {3};
  const Status s = exe.run_program(0, tokens);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kManifest);
  CHECK(s.error().message ==
        "program 'main', dispatch 0 'add_bias', step 'test_add_bias': param 0 (ids) may touch 800 B from offset 0 "
        "of buffer 'ids' (64 B): 736 B past its end; the launch's size params do not fit its buffers");
  std::vector<int64_t> acc(3, -1);
  REQUIRE(exe.read_buffer(2, std::span(reinterpret_cast<uint8_t*>(acc.data()), 24)).ok());
  CHECK(acc == std::vector<int64_t>{0, 0, 0});  // the kernel did not run
}

TEST_CASE("a lying offset is an extent error naming the scratch", "[load][extents]") {
  PlanDesc d = tiny_plan();
  d.programs[0].launches[1].args[1] = arg_scratch(0, 48);  // tmp is 64 B; 3 rows from 48 need 72
  auto l = load_on_cpu(d);
  const uint64_t tokens[] = {3};
  const Status s = l->exe->run_program(0, tokens);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message ==
        "program 'main', dispatch 1 'finish', step 'test_double': param 1 (tmp) may touch 24 B from offset 48 of "
        "scratch 'tmp' (64 B): 8 B past its end; the launch's size params do not fit its buffers");
  const uint64_t two[] = {2};  // 16 B from 48 fit
  CHECK(l->exe->run_program(0, two).ok());
}

TEST_CASE("a pointer outside every allocation or a null pointer is refused before the kernel runs",
          "[load][extents]") {
  auto l = load_on_cpu(tiny_plan());
  load::Device& dev = l->exe->device();
  int64_t host[8] = {};
  void* ids = host;
  void* bias = host;
  void* acc = host;
  int32_t n = 2;
  void* params[4] = {&ids, &bias, &acc, &n};
  load::LaunchDims dims;
  dims.grid[0] = 2;
  dims.block[0] = 32;
  Status s = dev.launch(0, dims, params);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message ==
        "param 0 (ids) points outside every buffer of the cpu device and the launch may touch 16 B");
  ids = nullptr;
  s = dev.launch(0, dims, params);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "param 0 (ids) is a null pointer and the launch may touch 16 B");
  // One past the end of an allocation is outside it too.
  ids = reinterpret_cast<void*>(l->exe->addresses().buffers[0] + 64);
  s = dev.launch(0, dims, params);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("points outside every buffer") != std::string::npos);
}
