// CpuDevice::prepare_weights (kern-load/cpu_device.cpp): which staged decode
// GEMV launches get their w packed (gemv_packed.h). It packs a w whose
// params are fixed at staging and which lies inside a weight buffer, once
// per (w, k, splits); it leaves alone a w outside every weight buffer (a
// workspace or state: its contents change between launches) and a launch
// whose n, k, splits or w is an expression recomputed per run.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "kern-load/cpu_device.h"
#include "kern-load/launch_staging.h"
#include "kern-load/plan_file.h"
#include "kernels-src/cpu/cpu_kernel.h"
#include "test/load/fake_kernels.h"
#include "test/load/plan_builder.h"

using namespace kern;
using namespace kern::test;

namespace {

constexpr int64_t kPackRows = 16, kPackK = 64;

/// A CpuDevice whose step 0 is kern_gemv_bf16 (the tiny plan with its first
/// step's symbol renamed; only load_kernels reads it).
std::unique_ptr<load::CpuDevice> gemv_device() {
  PlanDesc d = tiny_plan();
  d.steps[0].symbol = "kern_gemv_bf16";
  auto plan = load::PlanFile::from_bytes(serialize(d), "gemv.kplan");
  REQUIRE(plan.ok());
  auto dev = std::make_unique<load::CpuDevice>([](std::string_view s) {
    const cpu::CpuKernel* k = cpu::find_cpu_kernel(s);
    return k != nullptr ? k : fake_kernel(s);  // the tiny plan's other steps
  });
  const Status s = dev->load_kernels(plan.value(), "");
  INFO((s.ok() ? std::string() : s.error().message));
  REQUIRE(s.ok());
  return dev;
}

/// One staged kern_gemv_bf16 launch (params a, w, c, partial, counters, m,
/// n, k, lda, ldc, splits) reading `w` as [kPackRows, kPackK], with a patch
/// on param `patched` (an expression recomputed per run) when >= 0.
load::StagedProgram gemv_program(const uint16_t* w, int patched) {
  load::StagedProgram p;
  p.slots = {0, reinterpret_cast<uint64_t>(w), 0, 0, 0, 1, kPackRows, kPackK, kPackK, kPackRows, 1};
  for (uint64_t& s : p.slots) p.param_ptrs.push_back(&s);
  load::StagedLaunch l;
  l.step = 0;
  l.num_params = static_cast<uint32_t>(p.slots.size());
  if (patched >= 0) {
    load::ExprPatch patch;
    patch.slot = static_cast<uint32_t>(patched);
    patch.size_bytes = 4;
    p.patches.push_back(patch);
    l.num_patches = 1;
  }
  p.launches.push_back(l);
  return p;
}

}  // namespace

TEST_CASE("prepare_weights packs a fixed GEMV w inside a weight buffer, once", "[load][gemv_pack]") {
  auto dev = gemv_device();
  std::vector<uint16_t> weights(kPackRows * kPackK + 8, 0x3f80);
  const load::WeightRange range{reinterpret_cast<load::DevicePtr>(weights.data()), weights.size() * 2};
  std::vector<load::StagedProgram> programs;
  programs.push_back(gemv_program(weights.data(), -1));
  programs.push_back(gemv_program(weights.data(), -1));  // the same w again: not packed twice
  const auto bytes = dev->prepare_weights(programs, std::span(&range, 1));
  REQUIRE(bytes.ok());
  CHECK(bytes.value() == uint64_t{kPackRows * kPackK * 2});
}

TEST_CASE("prepare_weights leaves a GEMV w outside every weight buffer as given", "[load][gemv_pack]") {
  auto dev = gemv_device();
  std::vector<uint16_t> weights(kPackRows * kPackK, 0x3f80), workspace(kPackRows * kPackK, 0x3f80);
  const load::WeightRange range{reinterpret_cast<load::DevicePtr>(weights.data()), weights.size() * 2};
  std::vector<load::StagedProgram> programs;
  programs.push_back(gemv_program(workspace.data(), -1));
  // Starting inside the weight buffer but running past its end: not inside either.
  programs.push_back(gemv_program(weights.data() + kPackK, -1));
  const auto bytes = dev->prepare_weights(programs, std::span(&range, 1));
  REQUIRE(bytes.ok());
  CHECK(bytes.value() == 0);
}

TEST_CASE("prepare_weights leaves a GEMV whose w, n, k or splits is recomputed per run as given",
          "[load][gemv_pack]") {
  // Params 1 (w), 6 (n), 7 (k) and 10 (splits) of kern_gemv_bf16; a patch on
  // another param (m, 5) does not stop the packing.
  std::vector<uint16_t> weights(kPackRows * kPackK, 0x3f80);
  const load::WeightRange range{reinterpret_cast<load::DevicePtr>(weights.data()), weights.size() * 2};
  for (const int param : {1, 6, 7, 10, 5}) {
    auto dev = gemv_device();
    std::vector<load::StagedProgram> programs;
    programs.push_back(gemv_program(weights.data(), param));
    const auto bytes = dev->prepare_weights(programs, std::span(&range, 1));
    INFO("patched param " << param);
    REQUIRE(bytes.ok());
    CHECK(bytes.value() == (param == 5 ? uint64_t{kPackRows * kPackK * 2} : 0));
  }
}
