// The plan-vs-device precheck (device_precheck.h) against fabricated device
// properties: architectures, threads per block, block and grid limits,
// shared memory at the symbols' maxima, and the driver version.
#include <catch2/catch.hpp>

#include <cstring>

#include "kern-load/device_precheck.h"
#include "test/load/plan_builder.h"

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;

namespace {

/// An H100/H200-like device (9.0, driver 13.0).
load::DeviceLimits hopper() {
  load::DeviceLimits d;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.driver_version = 13000;
  d.max_threads_per_block = 1024;
  d.max_block[0] = d.max_block[1] = 1024;
  d.max_block[2] = 64;
  d.max_grid[0] = 2147483647;
  d.max_grid[1] = d.max_grid[2] = 65535;
  d.max_shared_mem_per_block = 232448;
  return d;
}

/// The images of a fatbin built with kernels_cuda_archs = 80,90,100,compute_100 (docs/gpu.md).
std::vector<load::KernelImage> built_images() { return {{false, 80}, {false, 90}, {true, 100}, {false, 100}}; }

/// Checks the tiny plan (step 0 at tokens <= 8) with step 0 changed by `edit`.
template <typename Edit>
std::vector<std::string> check(Edit edit, const load::DeviceLimits& device,
                               std::vector<load::KernelFileImages> files = {{"k.fatbin", built_images()}}) {
  PlanDesc d = tiny_plan();
  edit(d.steps[0]);
  std::vector<uint8_t> bytes = serialize(d);
  return load::precheck_plan(*plan::GetPlan(bytes.data()), files, device);
}

void no_edit(StepDesc&) {}

std::vector<uint8_t> fatbin_bytes(std::vector<std::pair<uint16_t, uint32_t>> entries) {
  std::vector<uint8_t> out(16, 0);
  const uint32_t magic = 0xBA55ED50;
  std::memcpy(out.data(), &magic, 4);
  const uint16_t header = 16;
  std::memcpy(out.data() + 6, &header, 2);
  for (auto [kind, arch] : entries) {
    std::vector<uint8_t> e(0x40 + 8, 0);
    const uint32_t ehdr = 0x40;
    const uint64_t payload = 8;
    std::memcpy(e.data(), &kind, 2);
    std::memcpy(e.data() + 4, &ehdr, 4);
    std::memcpy(e.data() + 8, &payload, 8);
    std::memcpy(e.data() + 0x1C, &arch, 4);
    out.insert(out.end(), e.begin(), e.end());
  }
  const uint64_t body = out.size() - 16;
  std::memcpy(out.data() + 8, &body, 8);
  return out;
}

}  // namespace

TEST_CASE("a plan within every device limit passes the precheck", "[load][precheck]") {
  CHECK(check(no_edit, hopper()).empty());
}

TEST_CASE("a kernel file without code for the device's compute capability is reported", "[load][precheck]") {
  load::DeviceLimits turing = hopper();
  turing.cc_major = 7;
  turing.cc_minor = 5;
  auto lines = check(no_edit, turing);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "k.fatbin: plan needs compute capability 8.0+ (sm_80, sm_90, compute_100, sm_100), device has 7.5");
}

TEST_CASE("SASS-only kernel files name the majors they run on, not a lower bound", "[load][precheck]") {
  // The default build (kernels_cuda_archs = 90): sm_90 SASS only, which a 10.0 device cannot run.
  load::DeviceLimits blackwell = hopper();
  blackwell.cc_major = 10;
  blackwell.cc_minor = 0;
  auto lines = check(no_edit, blackwell, {{"k.fatbin", {{false, 90}}}});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "k.fatbin: plan needs compute capability 9.x (sm_90), device has 10.0");
  load::DeviceLimits turing = hopper();
  turing.cc_major = 7;
  turing.cc_minor = 5;
  lines = check(no_edit, turing, {{"k.fatbin", {{false, 80}, {false, 90}}}});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "k.fatbin: plan needs compute capability 8.x or 9.x (sm_80, sm_90), device has 7.5");
  CHECK(check(no_edit, hopper(), {{"k.fatbin", {{false, 90}}}}).empty());
}

TEST_CASE("architecture matching follows SASS-same-major and PTX-JIT rules", "[load][precheck]") {
  const std::vector<load::KernelImage> sass80 = {{false, 80}};
  CHECK(load::images_run_on(sass80, 8, 6));       // sm_80 SASS runs on 8.6
  CHECK_FALSE(load::images_run_on(sass80, 9, 0));  // not across majors
  const std::vector<load::KernelImage> sass86 = {{false, 86}};
  CHECK_FALSE(load::images_run_on(sass86, 8, 0));  // not on a lower minor
  const std::vector<load::KernelImage> ptx100 = {{true, 100}};
  CHECK(load::images_run_on(ptx100, 12, 0));       // PTX JIT on newer GPUs
  CHECK_FALSE(load::images_run_on(ptx100, 9, 0));
  CHECK(load::images_run_on(built_images(), 9, 0));
  CHECK(load::images_run_on(built_images(), 12, 0));
}

TEST_CASE("block, grid and shared memory beyond the device limits are each reported as needs vs has",
          "[load][precheck]") {
  auto big_block = check([](StepDesc& s) { s.block[0] = 2048; }, hopper());
  REQUIRE(big_block.size() == 2);
  CHECK(big_block[0] == "steps[0] test_add_bias: plan needs 2048 threads per block, device has 1024");
  CHECK(big_block[1] == "steps[0] test_add_bias: plan needs block x 2048, device has 1024");
  auto block_z = check([](StepDesc& s) { s.block[2] = 128; s.block[0] = 1; }, hopper());
  REQUIRE(block_z.size() == 1);
  CHECK(block_z[0] == "steps[0] test_add_bias: plan needs block z 128, device has 64");
  // grid y = tokens * 10000 at tokens' maximum (8).
  auto grid = check([](StepDesc& s) { s.grid[1] = ExprDesc::s(0).mul(10000); }, hopper());
  REQUIRE(grid.size() == 1);
  CHECK(grid[0] == "steps[0] test_add_bias: plan needs grid y 80000, device has 65535");
  // shared memory = tokens * 40000 B at tokens = 8.
  auto smem = check([](StepDesc& s) { s.shared_mem = ExprDesc::s(0).mul(40000); }, hopper());
  REQUIRE(smem.size() == 1);
  CHECK(smem[0] == "steps[0] test_add_bias: plan needs 320000 B of shared memory per block, device has 232448 B");
  CHECK(check([](StepDesc& s) { s.shared_mem = ExprDesc::s(0).mul(20000); }, hopper()).empty());
}

TEST_CASE("dynamic shared memory is checked against the opt-in limit less the kernel's static shared memory",
          "[load][precheck]") {
  // tokens * 20000 B at tokens = 8: 160000 B, inside the 232448 B opt-in limit (precheck_plan passes).
  PlanDesc d = tiny_plan();
  d.steps[0].shared_mem = ExprDesc::s(0).mul(20000);
  std::vector<uint8_t> bytes = serialize(d);
  const plan::Plan& p = *plan::GetPlan(bytes.data());
  std::vector<load::KernelFileImages> files = {{"k.fatbin", built_images()}};
  CHECK(load::precheck_plan(p, files, hopper()).empty());
  const std::vector<uint64_t> fits = {232448 - 160000};  // exactly the room left
  CHECK(load::precheck_shared_memory(p, fits, 232448).empty());
  CHECK(load::precheck_shared_memory(p, {}, 232448).empty());  // no static shared memory known: 0
  const std::vector<uint64_t> too_much = {80000};
  auto lines = load::precheck_shared_memory(p, too_much, 232448);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "steps[0] test_add_bias: plan needs 160000 B of dynamic shared memory per block, device has "
                    "232448 B less the kernel's 80000 B of static shared memory = 152448 B");
  const std::vector<uint64_t> all = {300000};  // static alone above the limit: no room at all
  lines = load::precheck_shared_memory(p, all, 232448);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Contains("= 0 B"));
}

TEST_CASE("a driver older than 12.4 is reported and all mismatches come in one error", "[load][precheck]") {
  load::DeviceLimits old = hopper();
  old.driver_version = 12020;
  old.max_threads_per_block = 512;
  auto lines = check([](StepDesc& s) { s.block[0] = 1024; }, old);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "plan needs CUDA driver 12.4 or newer, device has 12.2");
  PlanDesc d = tiny_plan();
  d.steps[0].block[0] = 1024;
  auto bytes = serialize(d);
  std::vector<load::KernelFileImages> files = {{"k.fatbin", built_images()}};
  auto s = load::check_plan_fits(*plan::GetPlan(bytes.data()), files, old, "cuda:0 Test GPU");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kDevice);
  CHECK(s.error().message ==
        "the plan does not fit cuda:0 Test GPU:\n"
        "  plan needs CUDA driver 12.4 or newer, device has 12.2\n"
        "  steps[0] test_add_bias: plan needs 1024 threads per block, device has 512");
}

TEST_CASE("fatbin containers and plain cubins list their code images", "[load][precheck]") {
  auto fat = load::kernel_file_images("a.fatbin", fatbin_bytes({{2, 80}, {2, 90}, {1, 100}}));
  REQUIRE(fat.ok());
  CHECK(fat.value() == std::vector<load::KernelImage>{{false, 80}, {false, 90}, {true, 100}});
  std::vector<uint8_t> elf(0x40, 0);
  std::memcpy(elf.data(), "\x7f" "ELF", 4);
  elf[4] = 2;
  const uint32_t flags = 0x6005a04;  // nvcc 13's e_flags for sm_90
  std::memcpy(elf.data() + 0x30, &flags, 4);
  auto cubin = load::kernel_file_images("a.cubin", elf);
  REQUIRE(cubin.ok());
  CHECK(cubin.value() == std::vector<load::KernelImage>{{false, 90}});
  auto truncated = fatbin_bytes({{2, 80}});
  truncated.resize(truncated.size() - 4);
  auto bad = load::kernel_file_images("t.fatbin", truncated);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Contains("t.fatbin: fatbin body runs past the file"));
  const std::vector<uint8_t> junk(100, 7);
  CHECK_FALSE(load::kernel_file_images("j.bin", junk).ok());
}
