// The loader's side of the memory plan (docs/memory-plan.md): workspace
// buffers and scratch are views of one arena at the plan's offsets, the
// report counts bytes by class, --poison-workspace fills the arena with 0xFF
// before every run (and so exposes a read of unwritten workspace), and the
// cpu device reads weights in place from an owned weights file.
#include <catch2/catch.hpp>

#include <algorithm>

#include "kern-load/cpu_device.h"
#include "kern-load/executable.h"
#include "kern-load/memory_plan.h"
#include "test/load/buffer_reads.h"
#include "test/load/fake_kernels.h"
#include "test/load/plan_builder.h"
#include "test/load/test_files.h"

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;

namespace {

/// A weights file holding `bias` = {10, 20, 30, 40}, its data 8-byte aligned
/// in the file (the header is padded with spaces, as safetensors writers do).
std::string write_weights(TempDir& dir) {
  std::string header = R"({"bias":{"dtype":"I64","shape":[4],"data_offsets":[0,32]}})";
  header += std::string((8 - (8 + header.size()) % 8) % 8, ' ');
  std::string path = dir.file("w.safetensors");
  write_bytes(path, safetensors_bytes(header, i64_bytes({10, 20, 30, 40})));
  return path;
}

/// tiny_plan with a planned arena: 'acc' at 0, 'tmp' at 256 (they are live
/// together at launch 1), and a second program 'stale' that runs only
/// dispatch 'finish', reading 'acc' no launch of its own wrote.
PlanDesc planned_plan() {
  PlanDesc d = tiny_plan();
  d.buffers[2].arena_offset = 0;
  d.scratch[0].arena_offset = 256;
  d.arena = ArenaDesc{512, 256, 512, 512, true};
  const ExprDesc tokens = ExprDesc::s(0);
  ProgramDesc stale{"stale", 1, {}, std::vector<std::string>{"finish"}};
  stale.launches.push_back({1, 0, {arg_buffer(2), arg_scratch(0), arg_expr(tokens)}});
  stale.launches.push_back({2, 0, {arg_scratch(0), arg_buffer(3), arg_state(0, 8), arg_literal(1000), arg_expr(tokens)}});
  d.programs.push_back(stale);
  return d;
}

struct ArenaLoaded {
  TempDir dir;
  load::LoadTimings timings;
  std::unique_ptr<load::Executable> exe;
};

/// Loads `d` on a cpu device with fake kernels; the Executable owns the weights file.
Result<std::unique_ptr<ArenaLoaded>> load_owned(const PlanDesc& d, bool poison,
                                           std::unique_ptr<load::Device> device = nullptr) {
  auto out = std::make_unique<ArenaLoaded>();
  auto w = load::Safetensors::open(write_weights(out->dir));
  REQUIRE(w.ok());
  auto plan = load::PlanFile::from_bytes(serialize(d), "tiny.kplan");
  REQUIRE(plan.ok());
  load::ExecutableOptions options{16, ""};
  options.poison_workspace = poison;
  load::LoadMonitor monitor;
  monitor.timings = &out->timings;
  if (!device) device = std::make_unique<load::CpuDevice>(&fake_kernel);
  auto exe = load::Executable::load(std::move(plan.value()), std::move(device), std::move(w.value()), options,
                                    &monitor);
  if (!exe.ok()) return exe.error();
  out->exe = std::move(exe.value());
  return out;
}

std::vector<int64_t> run_main(load::Executable& exe) {
  auto ids = i64_bytes({1, 2, 3, 4, 5});
  REQUIRE(exe.write_input(0, ids).ok());
  const uint64_t tokens[] = {5};
  REQUIRE(exe.run_program(0, tokens).ok());
  return read_i64(exe, 3, 5);
}

}  // namespace

TEST_CASE("workspace buffers and scratch are views of one arena at the plan's offsets", "[load][arena]") {
  auto l = load_owned(planned_plan(), false);
  REQUIRE(l.ok());
  load::Executable& exe = *l.value()->exe;
  REQUIRE(exe.arena() != 0);
  CHECK(exe.arena() % 256 == 0);
  CHECK(exe.addresses().buffers[2] == exe.arena());
  CHECK(exe.addresses().scratch[0] == exe.arena() + 256);
  CHECK(exe.memory().arena.size_bytes == 512);
  // Same results as the unplanned layout of tiny_plan.
  CHECK(run_main(exe) == std::vector<int64_t>{1022, 1044, 1066, 1088, 1030});
}

TEST_CASE("the memory report counts bytes by class and the arena before and after planning", "[load][arena]") {
  auto l = load_owned(planned_plan(), false);
  REQUIRE(l.ok());
  const PlanMemoryBytes& m = l.value()->exe->memory().bytes;
  CHECK(m.weights == 32);
  CHECK(m.io == 128);  // ids + out
  CHECK(m.workspace == 64);
  CHECK(m.scratch == 64);
  CHECK(m.state_bytes_per_token == 8);
  REQUIRE(m.states.has_value());
  CHECK(*m.states == 128);  // 8 B x 16 tokens
  CHECK(m.arena == 512);
  CHECK(m.arena_unplanned == 512);
  CHECK(m.arena_planned);
  REQUIRE(m.total.has_value());
  CHECK(*m.total == 32 + 128 + 512 + 128);
}

TEST_CASE("--poison-workspace fills the arena with 0xFF before every run", "[load][arena][poison]") {
  auto l = load_owned(planned_plan(), true);
  REQUIRE(l.ok());
  load::Executable& exe = *l.value()->exe;
  CHECK(read_i64(exe, 2, 8) == std::vector<int64_t>(8, -1));  // poisoned at load
  // A program that writes before it reads is unaffected.
  CHECK(run_main(exe) == std::vector<int64_t>{1022, 1044, 1066, 1088, 1030});
  // 'stale' reads 'acc' without writing it: it sees the poison (-1), not
  // what 'main' left there (11, 22, ...) nor zero: out = 2 x -1 + 1000.
  const uint64_t tokens[] = {5};
  REQUIRE(exe.run_program(1, tokens).ok());
  CHECK(read_i64(exe, 3, 5) == std::vector<int64_t>(5, 998));
}

TEST_CASE("without poisoning a stale read sees whatever the arena held", "[load][arena][poison]") {
  auto l = load_owned(planned_plan(), false);
  REQUIRE(l.ok());
  load::Executable& exe = *l.value()->exe;
  run_main(exe);
  const uint64_t tokens[] = {5};
  REQUIRE(exe.run_program(1, tokens).ok());
  // acc still holds main's values (11, 22, 33, 44, 15): out = 2 x acc + 1000.
  CHECK(read_i64(exe, 3, 5) == std::vector<int64_t>{1022, 1044, 1066, 1088, 1030});
}

TEST_CASE("poisoning needs a device that can fill memory", "[load][arena][poison]") {
  class NoFill final : public load::Device {
   public:
    std::string name() const override { return "nofill"; }
    Result<load::DevicePtr> allocate(uint64_t s, uint64_t a) override { return inner_.allocate(s, a); }
    Status free(load::DevicePtr p) override { return inner_.free(p); }
    Status copy_to_device(load::DevicePtr d, const void* s, uint64_t n) override { return inner_.copy_to_device(d, s, n); }
    Status copy_to_host(void* d, load::DevicePtr s, uint64_t n) override { return inner_.copy_to_host(d, s, n); }
    Status load_kernels(const load::PlanFile& p, const std::string& dir) override { return inner_.load_kernels(p, dir); }
    Status launch(uint32_t step, const load::LaunchDims& dims, void** params) override {
      return inner_.launch(step, dims, params);
    }
    Status synchronize() override { return {}; }

   private:
    load::CpuDevice inner_{&fake_kernel};
  };
  auto l = load_owned(planned_plan(), true, std::make_unique<NoFill>());
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().kind == ErrorKind::kUsage);
  CHECK(l.error().message == "--poison-workspace: the nofill device cannot fill memory (poisoning is cpu only)");

  // The same device binds weights by copying (no host_view).
  auto copied = load_owned(planned_plan(), false, std::make_unique<NoFill>());
  REQUIRE(copied.ok());
  CHECK(copied.value()->timings.weight_bytes == 32);
  CHECK(copied.value()->timings.weight_bytes_in_place == 0);
  CHECK(run_main(*copied.value()->exe) == std::vector<int64_t>{1022, 1044, 1066, 1088, 1030});
}

TEST_CASE("the cpu device reads aligned weights in place from an owned weights file", "[load][weights]") {
  auto l = load_owned(planned_plan(), false);
  REQUIRE(l.ok());
  CHECK(l.value()->timings.weight_bytes_in_place == 32);
  CHECK(l.value()->timings.weight_bytes == 0);
  CHECK(run_main(*l.value()->exe) == std::vector<int64_t>{1022, 1044, 1066, 1088, 1030});
}

TEST_CASE("host_view refuses a misaligned or null address", "[load][weights]") {
  load::CpuDevice cpu(&fake_kernel);
  alignas(16) static const uint8_t bytes[32] = {};
  CHECK(cpu.host_view(bytes, 16, 8) == reinterpret_cast<uint64_t>(bytes));
  CHECK_FALSE(cpu.host_view(bytes + 4, 16, 8).has_value());
  CHECK_FALSE(cpu.host_view(nullptr, 16, 1).has_value());
}

TEST_CASE("cpu allocations read as zero and honour alignments above a page", "[load][memory]") {
  load::CpuDevice cpu(&fake_kernel);
  auto p = cpu.allocate(100000, 65536);
  REQUIRE(p.ok());
  CHECK(*p % 65536 == 0);
  std::vector<uint8_t> back(100000, 7);
  REQUIRE(cpu.copy_to_host(back.data(), *p, back.size()).ok());
  CHECK(std::all_of(back.begin(), back.end(), [](uint8_t b) { return b == 0; }));
  REQUIRE(cpu.fill_bytes(*p, 0xFF, 100000).ok());
  REQUIRE(cpu.copy_to_host(back.data(), *p, back.size()).ok());
  CHECK(std::all_of(back.begin(), back.end(), [](uint8_t b) { return b == 0xFF; }));
  CHECK(cpu.free(*p).ok());
  CHECK_FALSE(cpu.free(*p).ok());
}

TEST_CASE("plan_memory reports an allocation total over u64 instead of wrapping", "[load][arena]") {
  PlanDesc d = tiny_plan();
  d.states[0].bytes_per_token = 0;
  d.states[0].bytes_fixed = UINT64_MAX - 100;  // fits alone; rounding it up to 256 B does not
  const std::vector<uint8_t> bytes = serialize(d);
  auto m = load::plan_memory(*plan::GetPlan(bytes.data()), 16);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().kind == ErrorKind::kManifest);
  CHECK(m.error().message == "memory plan: the allocations' total at capacity 16 tokens overflows u64");
}
