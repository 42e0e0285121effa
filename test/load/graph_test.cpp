// Graphs (SPEC §6): the device-independent policy (graph_policy.h) and
// Executable's capture / replay / fallback on a fake graph-capable device
// that records launches while capturing and replays them from the "graph".
#include <catch2/catch.hpp>

#include <cstring>

#include "kern-load/cpu_device.h"
#include "kern-load/executable.h"
#include "kern-load/graph_policy.h"
#include "test/load/fake_kernels.h"
#include "test/load/plan_builder.h"
#include "test/load/test_files.h"

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;

namespace {

/// A cpu device with graphs: while capturing, launch() records (step, dims,
/// kernelParams); a graph launch replays the records through the cpu kernels.
/// Failures can be injected at begin_capture, end_capture, launch_graph, a
/// launch while capturing (then also at abort_capture), or at every cleanup
/// call (destroy_graph, free, close).
class FakeGraphDevice final : public load::Device {
 public:
  struct Counters {
    int begin_calls = 0, end_calls = 0, abort_calls = 0, graph_launches = 0, eager_launches = 0, destroyed = 0,
        closed = 0;
  };
  enum class Fail { kNone, kBegin, kEnd, kLaunchGraph, kRecord, kCleanup };
  explicit FakeGraphDevice(Fail fail = Fail::kNone) : fail_(fail) {}

  std::string name() const override { return "fake-graph"; }
  Result<load::DevicePtr> allocate(uint64_t s, uint64_t a) override { return inner_.allocate(s, a); }
  Status free(load::DevicePtr p) override {
    KERN_RETURN_IF_ERROR(inner_.free(p));
    if (fail_ == Fail::kCleanup) return make_error(ErrorKind::kDevice, "cuMemFree: injected");
    return {};
  }
  Status close() override {
    ++counters->closed;
    if (fail_ == Fail::kCleanup) return make_error(ErrorKind::kDevice, "cuDevicePrimaryCtxRelease: injected");
    return {};
  }
  Status copy_to_device(load::DevicePtr d, const void* s, uint64_t n) override {
    if (capturing_) return make_error(ErrorKind::kDevice, "copy while capturing");
    return inner_.copy_to_device(d, s, n);
  }
  Status copy_to_host(void* d, load::DevicePtr s, uint64_t n) override { return inner_.copy_to_host(d, s, n); }
  Status load_kernels(const load::PlanFile& plan, const std::string& dir) override {
    return inner_.load_kernels(plan, dir);
  }
  Status launch(uint32_t step, const load::LaunchDims& dims, void** params) override {
    if (capturing_) {
      if (fail_ == Fail::kRecord) return make_error(ErrorKind::kDevice, "launch while capturing: injected");
      recording_.push_back(Record{step, dims, params});
      return {};
    }
    ++counters->eager_launches;
    return inner_.launch(step, dims, params);
  }
  Status synchronize() override { return {}; }

  bool supports_graphs() const override { return true; }
  Status begin_capture() override {
    ++counters->begin_calls;
    if (fail_ == Fail::kBegin) return make_error(ErrorKind::kDevice, "cuStreamBeginCapture: injected");
    capturing_ = true;
    recording_.clear();
    return {};
  }
  Result<load::GraphHandle> end_capture() override {
    ++counters->end_calls;
    capturing_ = false;
    if (fail_ == Fail::kEnd) return make_error(ErrorKind::kDevice, "cuGraphInstantiate: injected");
    graphs_.push_back(recording_);
    return load::GraphHandle(graphs_.size());
  }
  Status abort_capture() override {
    ++counters->abort_calls;
    capturing_ = false;
    if (fail_ == Fail::kRecord) return make_error(ErrorKind::kDevice, "cuStreamEndCapture: injected");
    return {};
  }
  Status launch_graph(load::GraphHandle g) override {
    if (fail_ == Fail::kLaunchGraph) return make_error(ErrorKind::kDevice, "cuGraphLaunch: injected");
    ++counters->graph_launches;
    for (const Record& r : graphs_.at(g - 1)) KERN_RETURN_IF_ERROR(inner_.launch(r.step, r.dims, r.params));
    return {};
  }
  Status destroy_graph(load::GraphHandle) override {
    ++counters->destroyed;
    if (fail_ == Fail::kCleanup) return make_error(ErrorKind::kDevice, "cuGraphExecDestroy: injected");
    return {};
  }

  std::shared_ptr<Counters> counters = std::make_shared<Counters>();

 private:
  struct Record {
    uint32_t step;
    load::LaunchDims dims;
    void** params;
  };
  load::CpuDevice inner_{&fake_kernel};
  Fail fail_;
  bool capturing_ = false;
  std::vector<Record> recording_;
  std::vector<std::vector<Record>> graphs_;
};

struct GraphLoaded {
  std::vector<std::string> warnings;  // first: outlives exe, whose destructor may warn
  TempDir dir;
  std::unique_ptr<load::Safetensors> weights;
  std::unique_ptr<load::Executable> exe;
};

std::unique_ptr<GraphLoaded> load_tiny(std::unique_ptr<load::Device> device, bool graphs = true) {
  auto out = std::make_unique<GraphLoaded>();
  std::string wpath = out->dir.file("w.safetensors");
  write_bytes(wpath, safetensors_bytes(R"({"bias":{"dtype":"I64","shape":[4],"data_offsets":[0,32]}})",
                                       i64_bytes({10, 20, 30, 40})));
  auto w = load::Safetensors::open(wpath);
  REQUIRE(w.ok());
  out->weights = std::make_unique<load::Safetensors>(std::move(w.value()));
  auto plan = load::PlanFile::from_bytes(serialize(tiny_plan()), "tiny.kplan");
  REQUIRE(plan.ok());
  load::ExecutableOptions o;
  o.capacity_tokens = 16;
  o.graphs = graphs;
  load::LoadMonitor monitor;
  auto* warnings = &out->warnings;
  monitor.on_warning = [warnings](const std::string& w) { warnings->push_back(w); };
  auto exe = load::Executable::load(std::move(plan.value()), std::move(device), out->weights.get(), o, &monitor);
  REQUIRE(exe.ok());
  out->exe = std::move(exe.value());
  return out;
}

/// Runs the tiny program `runs` times at tokens = 5 and returns out[0..5) and kv slots 0..6.
std::pair<std::vector<int64_t>, std::vector<int64_t>> run_tiny(load::Executable& exe, int runs) {
  REQUIRE(exe.write_input(0, i64_bytes({1, 2, 3, 4, 5})).ok());
  const uint64_t tokens[] = {5};
  for (int i = 0; i < runs; ++i) REQUIRE(exe.run_program(0, tokens).ok());
  std::vector<int64_t> out(5), kv(7);
  REQUIRE(exe.read_buffer(3, std::span(reinterpret_cast<uint8_t*>(out.data()), 40)).ok());
  REQUIRE(exe.device().copy_to_host(kv.data(), exe.addresses().states[0], kv.size() * 8).ok());
  return {out, kv};
}

}  // namespace

TEST_CASE("the policy runs a key eagerly first, captures it when it repeats, then replays it", "[load][graph]") {
  load::GraphPolicy policy;
  const uint64_t decode[] = {1};
  const uint64_t prefill[] = {512};
  CHECK(policy.decide(1, decode).action == load::GraphAction::kEager);
  CHECK(policy.decide(0, prefill).action == load::GraphAction::kEager);
  REQUIRE(policy.decide(1, decode).action == load::GraphAction::kCapture);
  policy.add(1, decode, 77);
  auto d = policy.decide(1, decode);
  REQUIRE(d.action == load::GraphAction::kReplay);
  CHECK(d.graph->handle == 77);
  // Keyed by program and values: another program or value is its own key.
  CHECK(policy.decide(0, decode).action == load::GraphAction::kEager);
  const uint64_t seven[] = {7};
  CHECK(policy.decide(1, seven).action == load::GraphAction::kEager);
  CHECK(policy.decide(0, prefill).action == load::GraphAction::kCapture);
}

TEST_CASE("the policy keeps at most max_graphs graphs and runs further keys eagerly", "[load][graph]") {
  load::GraphPolicy policy({.enabled = true, .capture_after = 0, .max_graphs = 2, .max_tracked_keys = 64});
  for (uint64_t v = 1; v <= 2; ++v) {
    const uint64_t s[] = {v};
    REQUIRE(policy.decide(0, s).action == load::GraphAction::kCapture);
    policy.add(0, s, v);
  }
  const uint64_t third[] = {3};
  CHECK(policy.decide(0, third).action == load::GraphAction::kEager);
  CHECK(policy.decide(0, third).action == load::GraphAction::kEager);
  CHECK(policy.graphs().size() == 2);
}

TEST_CASE("a disabled policy always runs eagerly", "[load][graph]") {
  load::GraphPolicy policy({.enabled = false});
  const uint64_t s[] = {1};
  for (int i = 0; i < 4; ++i) CHECK(policy.decide(0, s).action == load::GraphAction::kEager);
  CHECK_FALSE(policy.active());
}

TEST_CASE("a replay at symbol values other than the capture's is refused", "[load][graph]") {
  load::CapturedGraph g{1, {1, 64}, 5};
  const uint64_t same[] = {1, 64};
  const uint64_t other[] = {2, 64};
  CHECK(load::check_replay(g, 1, same).ok());
  auto bad = load::check_replay(g, 1, other);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "graph of program 1 was captured at symbol values [1, 64], this run has [2, 64]; refusing to replay it");
  CHECK_FALSE(load::check_replay(g, 0, same).ok());
}

TEST_CASE("a graph failure disables graphs with one warning and is never retried", "[load][graph]") {
  load::GraphPolicy policy;
  const uint64_t s[] = {1};
  policy.decide(0, s);
  REQUIRE(policy.decide(0, s).action == load::GraphAction::kCapture);
  std::string w = policy.fail("decode", "capturing", make_error(ErrorKind::kDevice, "cuStreamBeginCapture: boom"));
  CHECK(w == "CUDA graphs disabled: capturing program 'decode' failed: cuStreamBeginCapture: boom; "
             "running eagerly from now on");
  CHECK(policy.fail("decode", "capturing", make_error(ErrorKind::kDevice, "again")).empty());
  for (int i = 0; i < 3; ++i) CHECK(policy.decide(0, s).action == load::GraphAction::kEager);
}

TEST_CASE("repeated runs are captured once, replayed after, and compute what eager runs compute", "[load][graph]") {
  auto dev = std::make_unique<FakeGraphDevice>();
  auto counters = dev->counters;
  auto graphed = load_tiny(std::move(dev));
  auto [out_g, kv_g] = run_tiny(*graphed->exe, 5);
  const load::GraphStats& st = graphed->exe->graph_stats();
  CHECK(st.eager_runs == 1);
  CHECK(st.captures == 1);
  CHECK(st.replays == 3);
  CHECK(counters->begin_calls == 1);
  CHECK(counters->graph_launches == 4);  // the capture's own launch + 3 replays
  CHECK(graphed->warnings.empty());

  auto eager = load_tiny(std::make_unique<FakeGraphDevice>(), /*graphs=*/false);
  auto [out_e, kv_e] = run_tiny(*eager->exe, 5);
  CHECK(eager->exe->graph_stats().captures == 0);
  CHECK(eager->exe->graph_stats().eager_runs == 5);
  CHECK(out_g == out_e);
  CHECK(kv_g == kv_e);  // every run executed exactly once: the kv counters agree
  CHECK(kv_g == std::vector<int64_t>{0, 5, 5, 5, 5, 5, 0});
  graphed.reset();
  CHECK(counters->destroyed == 1);
}

TEST_CASE("graphs off (--eager) never captures", "[load][graph]") {
  auto dev = std::make_unique<FakeGraphDevice>();
  auto counters = dev->counters;
  auto l = load_tiny(std::move(dev), /*graphs=*/false);
  run_tiny(*l->exe, 4);
  CHECK(counters->begin_calls == 0);
  CHECK(counters->graph_launches == 0);
  CHECK_FALSE(l->exe->graphs_active());
}

TEST_CASE("the cpu device has no graphs and every run is eager", "[load][graph]") {
  auto l = load_tiny(std::make_unique<load::CpuDevice>(&fake_kernel));
  run_tiny(*l->exe, 3);
  CHECK(l->exe->graph_stats().eager_runs == 3);
  CHECK(l->exe->graph_stats().captures == 0);
  CHECK_FALSE(l->exe->graphs_active());
}

TEST_CASE("a failed capture or graph launch falls back to eager once, warns once and keeps results exact",
          "[load][graph]") {
  auto fail = GENERATE(FakeGraphDevice::Fail::kBegin, FakeGraphDevice::Fail::kEnd, FakeGraphDevice::Fail::kLaunchGraph);
  auto dev = std::make_unique<FakeGraphDevice>(fail);
  auto counters = dev->counters;
  auto l = load_tiny(std::move(dev));
  auto [out, kv] = run_tiny(*l->exe, 4);
  CHECK(out == std::vector<int64_t>{1022, 1044, 1066, 1088, 1030});
  CHECK(kv == std::vector<int64_t>{0, 4, 4, 4, 4, 4, 0});  // no run skipped, none doubled
  CHECK(counters->begin_calls == 1);                       // never retried
  REQUIRE(l->warnings.size() == 1);
  CHECK_THAT(l->warnings[0], Contains("CUDA graphs disabled") && Contains("program 'main'") && Contains("injected"));
  CHECK(l->exe->graph_stats().fallbacks == 1);
  CHECK(l->exe->graph_stats().eager_runs == 4);
  CHECK_FALSE(l->exe->graphs_active());
}

TEST_CASE("a launch failing during capture is joined with the abort's failure in the one warning", "[load][graph]") {
  auto dev = std::make_unique<FakeGraphDevice>(FakeGraphDevice::Fail::kRecord);
  auto counters = dev->counters;
  auto l = load_tiny(std::move(dev));
  auto [out, kv] = run_tiny(*l->exe, 3);
  CHECK(out == std::vector<int64_t>{1022, 1044, 1066, 1088, 1030});
  CHECK(kv == std::vector<int64_t>{0, 3, 3, 3, 3, 3, 0});
  CHECK(counters->abort_calls == 1);
  REQUIRE(l->warnings.size() == 1);
  CHECK_THAT(l->warnings[0], Contains("launch while capturing: injected; then: cuStreamEndCapture: injected"));
}

TEST_CASE("close() tries every release and joins their failures; a second close() is a no-op", "[load][graph]") {
  auto dev = std::make_unique<FakeGraphDevice>(FakeGraphDevice::Fail::kCleanup);
  auto counters = dev->counters;
  auto l = load_tiny(std::move(dev));
  run_tiny(*l->exe, 3);  // captures one graph
  const Status s = l->exe->close();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kDevice);
  // The graph, then the frees (StatusJoin shows 4 failures and counts the rest,
  // among them the device's close).
  CHECK_THAT(s.error().message, Contains("tiny.kplan: releasing device resources") &&
                                    Contains("cuGraphExecDestroy: injected; then: cuMemFree: injected") &&
                                    Contains(" more"));
  CHECK(counters->destroyed == 1);
  CHECK(counters->closed == 1);
  CHECK(l->exe->close().ok());
  l->exe.reset();
  CHECK(counters->closed == 1);  // the destructor does not release twice
  CHECK(l->warnings.empty());    // nor warn about what close() already returned
}

TEST_CASE("an Executable destroyed without close() reports its cleanup failures as one warning", "[load][graph]") {
  auto l = load_tiny(std::make_unique<FakeGraphDevice>(FakeGraphDevice::Fail::kCleanup));
  run_tiny(*l->exe, 1);
  l->exe.reset();
  REQUIRE(l->warnings.size() == 1);
  CHECK_THAT(l->warnings[0], Contains("releasing device resources") && Contains("cuMemFree: injected"));
}

TEST_CASE("a clean close() releases everything once and returns ok", "[load][graph]") {
  auto dev = std::make_unique<FakeGraphDevice>();
  auto counters = dev->counters;
  auto l = load_tiny(std::move(dev));
  run_tiny(*l->exe, 3);
  CHECK(l->exe->close().ok());
  CHECK(counters->destroyed == 1);
  CHECK(counters->closed == 1);
  // A closed executable refuses work instead of touching released memory.
  const uint64_t tokens[] = {5};
  const Status run = l->exe->run_program(0, tokens);
  REQUIRE_FALSE(run.ok());
  CHECK(run.error().kind == ErrorKind::kUsage);
  CHECK_THAT(run.error().message, Contains("tiny.kplan: the executable was closed"));
  CHECK_FALSE(l->exe->write_input(0, i64_bytes({1})).ok());
  std::vector<uint8_t> out(8);
  CHECK_FALSE(l->exe->read_buffer(3, out).ok());
  CHECK_FALSE(l->exe->synchronize().ok());
  l->exe.reset();
  CHECK(l->warnings.empty());
}
