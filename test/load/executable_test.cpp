// Executable: memory plan, symbol bounds, argument staging and replay of the
// tiny plan on the cpu device with fake reference kernels.
#include <catch2/catch.hpp>

#include <cstring>

#include "kern-load/cpu_device.h"
#include "kern-load/executable.h"
#include "test/load/buffer_reads.h"
#include "test/load/fake_kernels.h"
#include "test/load/plan_builder.h"
#include "test/load/test_files.h"

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;

namespace {

/// A cpu device that records every launch's geometry and parameter values
/// (fakes over mocks: it still runs the fake kernels).
class RecordingDevice final : public load::Device {
 public:
  struct Launch {
    uint32_t step;
    load::LaunchDims dims;
    std::vector<uint64_t> values;  ///< each param's value, zero-extended
  };
  std::string name() const override { return "recording"; }
  Result<load::DevicePtr> allocate(uint64_t s, uint64_t a) override { return inner_.allocate(s, a); }
  Status free(load::DevicePtr p) override { return inner_.free(p); }
  void name_allocation(load::DevicePtr p, const std::string& n) override { inner_.name_allocation(p, n); }
  Status copy_to_device(load::DevicePtr d, const void* s, uint64_t n) override { return inner_.copy_to_device(d, s, n); }
  Status copy_to_host(void* d, load::DevicePtr s, uint64_t n) override { return inner_.copy_to_host(d, s, n); }
  Status load_kernels(const load::PlanFile& plan, const std::string& dir) override {
    plan_ = &plan.plan();
    return inner_.load_kernels(plan, dir);
  }
  Status launch(uint32_t step, const load::LaunchDims& dims, void** params) override {
    Launch l{step, dims, {}};
    const auto* prm = plan_->steps()->Get(step)->params();
    for (flatbuffers::uoffset_t i = 0; i < prm->size(); ++i) {
      uint64_t v = 0;
      size_t size = prm->Get(i)->kind() == plan::ParamKind::i32 ? 4 : prm->Get(i)->kind() == plan::ParamKind::u8 ? 1 : 8;
      std::memcpy(&v, params[i], size);
      l.values.push_back(v);
    }
    launches->push_back(l);
    return inner_.launch(step, dims, params);
  }
  Status synchronize() override { return {}; }

  std::shared_ptr<std::vector<Launch>> launches = std::make_shared<std::vector<Launch>>();

 private:
  load::CpuDevice inner_{&fake_kernel};
  const plan::Plan* plan_ = nullptr;
};

struct RecordedLoad {
  TempDir dir;
  std::unique_ptr<load::Safetensors> weights;
  std::unique_ptr<load::Executable> exe;
  std::shared_ptr<std::vector<RecordingDevice::Launch>> launches;
};

/// Loads `d` with bias = {10, 20, 30, 40} at `capacity` tokens.
Result<std::unique_ptr<RecordedLoad>> load_plan(const PlanDesc& d, uint64_t capacity = 16,
                                          std::unique_ptr<load::Device> device = nullptr) {
  auto out = std::make_unique<RecordedLoad>();
  std::string wpath = out->dir.file("w.safetensors");
  write_bytes(wpath, safetensors_bytes(R"({"bias":{"dtype":"I64","shape":[4],"data_offsets":[0,32]}})",
                                       i64_bytes({10, 20, 30, 40})));
  auto w = load::Safetensors::open(wpath);
  REQUIRE(w.ok());
  out->weights = std::make_unique<load::Safetensors>(std::move(w.value()));
  auto plan = load::PlanFile::from_bytes(serialize(d), "tiny.kplan");
  if (!plan.ok()) return plan.error();
  if (!device) {
    auto rec = std::make_unique<RecordingDevice>();
    out->launches = rec->launches;
    device = std::move(rec);
  }
  auto exe = load::Executable::load(std::move(plan.value()), std::move(device), out->weights.get(),
                                    load::ExecutableOptions{capacity, ""}, nullptr);
  if (!exe.ok()) return exe.error();
  out->exe = std::move(exe.value());
  return out;
}

}  // namespace

TEST_CASE("the tiny plan runs end to end on the cpu device and state persists across runs", "[load][run]") {
  auto l = load_plan(tiny_plan());
  REQUIRE(l.ok());
  load::Executable& exe = *l.value()->exe;
  auto ids = i64_bytes({1, 2, 3, 4, 5});
  REQUIRE(exe.write_input(0, ids).ok());
  const uint64_t tokens5[] = {5};
  REQUIRE(exe.run_program(0, tokens5).ok());
  CHECK(read_i64(exe, 3, 5) == std::vector<int64_t>{1022, 1044, 1066, 1088, 1030});
  const uint64_t tokens2[] = {2};
  REQUIRE(exe.run_program(0, tokens2).ok());
  CHECK(read_i64(exe, 3, 5) == std::vector<int64_t>{1022, 1044, 1066, 1088, 1030});  // rows 0-1 rewritten, same ids
  // kv + 8 B: slots 1..5 counted once, 1..2 twice; slot 0 untouched.
  std::vector<int64_t> kv(7);
  REQUIRE(exe.device().copy_to_host(kv.data(), exe.addresses().states[0], kv.size() * 8).ok());
  CHECK(kv == std::vector<int64_t>{0, 2, 2, 1, 1, 1, 0});
  CHECK(exe.last_symbol_values().size() == 1);
  CHECK(exe.last_symbol_values()[0] == 2);
}

TEST_CASE("every allocation is at least 256-byte aligned and sized at the maxima and capacity", "[load][memory]") {
  auto l = load_plan(tiny_plan(), 100);
  REQUIRE(l.ok());
  const load::Executable& exe = *l.value()->exe;
  CHECK(exe.memory().buffers[0].size_bytes == 64);
  CHECK(exe.memory().states[0].size_bytes == 800);
  CHECK(exe.memory().scratch[0].size_bytes == 64);
  for (auto* v : {&exe.addresses().buffers, &exe.addresses().states, &exe.addresses().scratch})
    for (load::DevicePtr p : *v) CHECK(p % 256 == 0);
}

TEST_CASE("a launch's kernelParams hold base+offset pointers, literal bits and per-run expressions",
          "[load][staging]") {
  auto l = load_plan(tiny_plan());
  REQUIRE(l.ok());
  load::Executable& exe = *l.value()->exe;
  const load::Addresses& a = exe.addresses();
  const uint64_t t3[] = {3};
  const uint64_t t8[] = {8};
  REQUIRE(exe.run_program(0, t3).ok());
  REQUIRE(exe.run_program(0, t8).ok());
  const auto& launches = *l.value()->launches;
  REQUIRE(launches.size() == 6);
  // Launch 2 of the first run: test_finish(tmp, out, kv + 8, 1000, tokens).
  const auto& fin = launches[2];
  CHECK(fin.step == 2);
  CHECK(fin.values == std::vector<uint64_t>{a.scratch[0], a.buffers[3], a.states[0] + 8, 1000, 3});
  CHECK(fin.dims.shared_mem_bytes == 48);
  CHECK(fin.dims.block[0] == 128);
  // The same launch in the second run sees the new symbol value.
  CHECK(launches[5].values[4] == 8);
  CHECK(launches[5].dims.shared_mem_bytes == 128);
  // Grids: [tokens,1,1] and [ceil_div(tokens, 4), 2, 1].
  CHECK(launches[0].dims.grid[0] == 3);
  CHECK(launches[1].dims.grid[0] == 1);
  CHECK(launches[1].dims.grid[1] == 2);
  CHECK(launches[4].dims.grid[0] == 2);
  CHECK(launches[0].values[0] == a.buffers[0]);
}

TEST_CASE("a literal that does not fit its param's type is rejected at open", "[load][staging]") {
  PlanDesc d = tiny_plan();
  // i32 param given a literal with high garbage bits (a flipped byte under a valid checksum).
  d.programs[0].launches[0].args[3] = arg_literal(0xdeadbeef00000004ull);
  auto bad = load_plan(d);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "tiny.kplan: programs[0] 'main'.launches[0].args[3]: literal 0xdeadbeef00000004 "
                               "does not fit the param's 4-byte type");
  d.programs[0].launches[0].args[3] = arg_literal(4);
  auto l = load_plan(d);
  REQUIRE(l.ok());
  const uint64_t t4[] = {4};
  REQUIRE(l.value()->exe->run_program(0, t4).ok());
  CHECK((*l.value()->launches)[0].values[3] == 4);
  const auto& staged = l.value()->exe->staged(0);
  CHECK(staged.patches.size() == 2);  // tokens into test_double and test_finish; the literal is fixed
}

TEST_CASE("a symbol value outside its bounds is rejected naming symbol, value and bounds", "[load][run]") {
  auto l = load_plan(tiny_plan());
  REQUIRE(l.ok());
  const uint64_t t9[] = {9};
  Status s = l.value()->exe->run_program(0, t9);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kUsage);
  CHECK(s.error().message == "symbol 'tokens' = 9 is outside its bounds [1, 8]");
  const uint64_t t0[] = {0};
  CHECK(l.value()->exe->run_program(0, t0).error().message == "symbol 'tokens' = 0 is outside its bounds [1, 8]");
  CHECK(l.value()->exe->run_program(0, {}).error().message == "0 symbol values given, the plan has 1 symbols");
  CHECK(l.value()->launches->empty());  // nothing launched
}

TEST_CASE("a failing kernel's error names program, dispatch label and step symbol", "[load][run]") {
  PlanDesc d = tiny_plan();
  d.programs[0].launches[2].args[3] = arg_literal(static_cast<uint64_t>(-5));  // test_finish rejects k < 0
  auto l = load_plan(d);
  REQUIRE(l.ok());
  const uint64_t t1[] = {1};
  Status s = l.value()->exe->run_program(0, t1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "program 'main', dispatch 1 'finish', step 'test_finish': test_finish: negative k");
}

TEST_CASE("a step symbol without a cpu reference kernel is a load error naming it", "[load][run]") {
  PlanDesc d = tiny_plan();
  d.steps[1].symbol = "kern_missing_bf16";
  auto l = load_plan(d, 16, std::make_unique<load::CpuDevice>(&fake_kernel));
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().kind == ErrorKind::kKernel);
  CHECK(l.error().message ==
        "tiny.kplan: loading kernels: steps[1]: symbol 'kern_missing_bf16' has no cpu reference kernel");
}

TEST_CASE("a state view beyond the state at the chosen capacity is a load error", "[load][memory]") {
  auto l = load_plan(tiny_plan(), 1);  // kv = 8 B; the plan passes kv + 8
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().message == "tiny.kplan: programs 'main'.launches[2].args[2]: offset 8 B is beyond state 'kv' "
                             "(8 B at capacity 1 tokens)");
}

TEST_CASE("inputs and reads are bounds-checked against the buffer and inputs only go to input buffers",
          "[load][run]") {
  auto l = load_plan(tiny_plan());
  REQUIRE(l.ok());
  load::Executable& exe = *l.value()->exe;
  std::vector<uint8_t> big(72);
  CHECK(exe.write_input(0, big).error().message == "writing 72 B at offset 0 into buffer 'ids' of 64 B");
  CHECK(exe.write_input(0, std::span(big).first(8), 60).error().message ==
        "writing 8 B at offset 60 into buffer 'ids' of 64 B");
  CHECK(exe.write_input(0, std::span(big).first(8), 56).ok());
  CHECK(exe.write_input(1, std::span(big).first(8)).error().message == "buffer 'bias' is not an input or carry buffer");
  CHECK(exe.read_buffer(3, big).error().message == "reading 72 B from buffer 'out' of 64 B");
  CHECK(exe.read_buffer(9, big).error().message == "buffer index 9 out of range");
  const uint64_t t3[] = {3};
  auto size = exe.buffer_size_bytes(3, t3);
  REQUIRE(size.ok());
  CHECK(*size == 24);
}

TEST_CASE("each weights-file tensor the plan does not use is one note through LoadMonitor::on_note", "[load][run]") {
  TempDir dir;
  std::string wpath = dir.file("w.safetensors");
  write_bytes(wpath, safetensors_bytes(R"({"bias":{"dtype":"I64","shape":[4],"data_offsets":[0,32]},)"
                                       R"("extra":{"dtype":"I64","shape":[1],"data_offsets":[32,40]}})",
                                       i64_bytes({10, 20, 30, 40, 50})));
  auto w = load::Safetensors::open(wpath);
  REQUIRE(w.ok());
  auto plan = load::PlanFile::from_bytes(serialize(tiny_plan()), "tiny.kplan");
  REQUIRE(plan.ok());
  std::vector<std::string> notes, warnings;
  load::LoadMonitor monitor;
  monitor.on_note = [&notes](const std::string& n) { notes.push_back(n); };
  monitor.on_warning = [&warnings](const std::string& n) { warnings.push_back(n); };
  auto exe = load::Executable::load(std::move(plan.value()), std::make_unique<RecordingDevice>(), &w.value(),
                                    load::ExecutableOptions{16, ""}, &monitor);
  REQUIRE(exe.ok());
  CHECK(notes == std::vector<std::string>{wpath + ": tensor 'extra' is not used by the plan"});
  exe.value().reset();
  CHECK(warnings.empty());
}

// The cold-path debugging API (issue: kern-run compare needs a program run
// in parts with any region read or written between the parts).
TEST_CASE("a program run in launch ranges gives the outputs of one run_program", "[load][debug]") {
  auto whole = load_plan(tiny_plan());
  auto parts = load_plan(tiny_plan());
  REQUIRE(whole.ok());
  REQUIRE(parts.ok());
  auto ids = i64_bytes({1, 2, 3, 4, 5});
  const uint64_t t5[] = {5};
  REQUIRE(whole.value()->exe->write_input(0, ids).ok());
  REQUIRE(whole.value()->exe->run_program(0, t5).ok());
  load::Executable& exe = *parts.value()->exe;
  REQUIRE(exe.write_input(0, ids).ok());
  REQUIRE(exe.run_launches(0, t5, 0, 1).ok());
  // acc (buffer 2) = ids + bias after the first launch; read it before the next part.
  std::vector<int64_t> acc(5);
  REQUIRE(exe.read_region({load::RegionKind::kBuffer, 2}, 0, std::span(reinterpret_cast<uint8_t*>(acc.data()), 40)).ok());
  CHECK(acc == std::vector<int64_t>{11, 22, 33, 44, 15});
  REQUIRE(exe.run_launches(0, t5, 1, 2).ok());
  CHECK(read_i64(exe, 3, 5) == read_i64(*whole.value()->exe, 3, 5));
  CHECK(exe.traffic().launches == 3);
  CHECK(exe.traffic().program_runs == 0);
  CHECK(exe.graph_stats().eager_runs == 0);
}

TEST_CASE("a region written between launch ranges is what the later launches read", "[load][debug]") {
  auto l = load_plan(tiny_plan());
  REQUIRE(l.ok());
  load::Executable& exe = *l.value()->exe;
  REQUIRE(exe.write_input(0, i64_bytes({1, 2})).ok());
  const uint64_t t2[] = {2};
  REQUIRE(exe.run_launches(0, t2, 0, 1).ok());
  auto acc = i64_bytes({100, 200});  // replaces ids + bias in the workspace
  REQUIRE(exe.write_region({load::RegionKind::kBuffer, 2}, 0, acc).ok());
  REQUIRE(exe.run_launches(0, t2, 1, 2).ok());
  auto plain = load_plan(tiny_plan());
  REQUIRE(plain.ok());
  REQUIRE(plain.value()->exe->write_input(0, i64_bytes({90, 180})).ok());  // ids that make the same acc
  REQUIRE(plain.value()->exe->run_program(0, t2).ok());
  CHECK(read_i64(exe, 3, 2) == read_i64(*plain.value()->exe, 3, 2));
  // The state (kv, 8 B per token) is read and written like any buffer.
  std::vector<int64_t> kv(3);
  REQUIRE(exe.read_region({load::RegionKind::kState, 0}, 0, std::span(reinterpret_cast<uint8_t*>(kv.data()), 24)).ok());
  CHECK(kv == std::vector<int64_t>{0, 1, 1});
  REQUIRE(exe.write_region({load::RegionKind::kState, 0}, 8, i64_bytes({7})).ok());
  REQUIRE(exe.read_region({load::RegionKind::kState, 0}, 0, std::span(reinterpret_cast<uint8_t*>(kv.data()), 24)).ok());
  CHECK(kv == std::vector<int64_t>{0, 7, 1});
  CHECK(exe.region_size_bytes({load::RegionKind::kState, 0}).value() == 128);
  CHECK(exe.region_name({load::RegionKind::kScratch, 0}) == "scratch 'tmp'");
}

TEST_CASE("the launch-range and region calls refuse bad ranges, indices and weights", "[load][debug]") {
  auto l = load_plan(tiny_plan());
  REQUIRE(l.ok());
  load::Executable& exe = *l.value()->exe;
  const uint64_t t2[] = {2};
  CHECK(exe.run_launches(0, t2, 2, 2).error().message == "launches [2, 4) of program 'main' (3 launches)");
  CHECK(exe.run_launches(1, t2, 0, 1).error().message == "program index 1 out of range (1 programs)");
  const uint64_t t9[] = {9};
  CHECK(exe.run_launches(0, t9, 0, 1).error().message == "symbol 'tokens' = 9 is outside its bounds [1, 8]");
  uint8_t bytes[16] = {};
  CHECK(exe.write_region({load::RegionKind::kBuffer, 1}, 0, std::span(bytes, 8)).error().message ==
        "buffer 'bias' is a weight: weights cannot be written");
  CHECK(exe.read_region({load::RegionKind::kBuffer, 0}, 60, std::span(bytes, 8)).error().message ==
        "reading 8 B at offset 60 of buffer 'ids' of 64 B");
  CHECK(exe.write_region({load::RegionKind::kState, 3}, 0, std::span(bytes, 8)).error().message ==
        "state ?: index 3 out of range");
  CHECK(exe.region_size_bytes({load::RegionKind::kScratch, 1}).error().kind == ErrorKind::kUsage);
  REQUIRE(exe.close().ok());
  CHECK(exe.run_launches(0, t2, 0, 1).error().kind == ErrorKind::kUsage);
  CHECK(exe.read_region({load::RegionKind::kBuffer, 0}, 0, std::span(bytes, 8)).error().kind == ErrorKind::kUsage);
}
