// The device-resident decode loop (docs/runtime.md, "Asynchronous decode";
// docs/qwen3-manifest.md, "Who writes what") on the tiny model and the cpu
// device: the asynchronous loop gives exactly the synchronous loop's ids for
// every prompt, chunk size and stop condition; a decode step writes nothing
// from the host (counted at the device, below the executable); the decode
// program's advance leaves the next step's inputs in the carries; surplus
// steps after a stop change nothing later runs see.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "kern-run/bench.h"
#include "kern-run/generate.h"
#include "kern-run/qwen3_driver.h"
#include "test/run/tiny_model.h"

using namespace kern;
using namespace kern::test;

namespace {

const std::vector<int64_t> kPrompt = {3, 17, 99, 200, 5, 42, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22};

/// A cpu device that counts host->device and device->host copies and
/// launches (forwarding everything to a real CpuDevice).
class CountingDevice final : public load::Device {
 public:
  struct Counts {
    uint64_t to_device = 0, to_host = 0, launches = 0;
  };
  explicit CountingDevice(std::shared_ptr<Counts> counts) : counts_(std::move(counts)) {}
  std::string name() const override { return "counting cpu"; }
  Result<load::DevicePtr> allocate(uint64_t s, uint64_t a) override { return inner_->allocate(s, a); }
  Status free(load::DevicePtr p) override { return inner_->free(p); }
  Status copy_to_device(load::DevicePtr d, const void* s, uint64_t n) override {
    ++counts_->to_device;
    return inner_->copy_to_device(d, s, n);
  }
  Status copy_to_host(void* d, load::DevicePtr s, uint64_t n) override {
    ++counts_->to_host;
    return inner_->copy_to_host(d, s, n);
  }
  Status load_kernels(const load::PlanFile& plan, const std::string& dir) override {
    return inner_->load_kernels(plan, dir);
  }
  Status launch(uint32_t step, const load::LaunchDims& dims, void** params) override {
    ++counts_->launches;
    return inner_->launch(step, dims, params);
  }
  Status synchronize() override { return {}; }

 private:
  std::unique_ptr<load::Device> inner_ = load::make_cpu_device();
  std::shared_ptr<Counts> counts_;
};

/// The tiny model on a CountingDevice.
struct CountedModel {
  std::shared_ptr<CountingDevice::Counts> counts = std::make_shared<CountingDevice::Counts>();
  std::unique_ptr<load::Safetensors> weights;
  std::unique_ptr<load::Executable> exe;
  run::Qwen3Contract contract;
};

CountedModel load_counted(uint64_t capacity) {
  CountedModel m;
  auto plan = load::PlanFile::open(env_path("KERN_TINY_PLAN"));
  REQUIRE(plan.ok());
  auto c = run::resolve_qwen3_contract(plan.value());
  REQUIRE(c.ok());
  m.contract = c.value();
  auto w = load::Safetensors::open(env_path("KERN_TINY_WEIGHTS"));
  REQUIRE(w.ok());
  m.weights = std::make_unique<load::Safetensors>(std::move(w.value()));
  load::ExecutableOptions options;
  options.capacity_tokens = capacity;
  auto exe = load::Executable::load(std::move(plan.value()), std::make_unique<CountingDevice>(m.counts),
                                    m.weights.get(), options, nullptr);
  if (!exe.ok()) FAIL(exe.error().message);
  m.exe = std::move(exe.value());
  return m;
}

/// Generates on a fresh tiny model (capacity `capacity`, 0 = default).
run::GenerateResult gen(const std::vector<int64_t>& prompt, uint64_t steps, uint64_t chunk, bool sync,
                        std::vector<int64_t> stop_ids = {}, uint64_t capacity = 0) {
  TinyModel m = load_tiny_model(capacity);
  run::GenerateRequest r{prompt, steps, chunk, m.capacity, std::move(stop_ids), nullptr};
  r.sync = sync;
  auto out = run::generate(*m.exe, m.contract, r);
  if (!out.ok()) FAIL(out.error().message);
  return out.value();
}

template <typename T>
T read(load::Executable& exe, uint32_t buffer) {
  T v{};
  REQUIRE(exe.read_buffer(buffer, std::span(reinterpret_cast<uint8_t*>(&v), sizeof v)).ok());
  return v;
}

}  // namespace

TEST_CASE("asynchronous decode gives the synchronous loop's ids for every prompt and chunk size",
          "[run][decode_loop]") {
  const std::vector<std::vector<int64_t>> prompts = {kPrompt, {100}, {7, 7}, std::vector<int64_t>(40, 250)};
  for (const auto& prompt : prompts) {
    for (uint64_t chunk : {1, 4, 16, 512}) {
      INFO("prompt of " << prompt.size() << " tokens, chunk " << chunk);
      const auto sync = gen(prompt, 9, chunk, true);
      const auto async = gen(prompt, 9, chunk, false);
      CHECK(async.generated_ids == sync.generated_ids);
      CHECK(async.generated_ids.size() == 9);
      CHECK_FALSE(async.sync);
      CHECK(sync.sync);
      CHECK(async.surplus_steps == 0);  // no stop id: nothing is issued past --steps
    }
  }
}

TEST_CASE("asynchronous decode stops on a stop id inside the surplus window and discards the surplus step",
          "[run][decode_loop]") {
  const auto full = gen(kPrompt, 12, 512, true).generated_ids;
  // Stop at every step index where the id has not occurred before: the
  // step after it is already queued (lookahead 2) unless it is the last.
  for (size_t k = 0; k + 1 < full.size(); ++k) {
    if (std::find(full.begin(), full.begin() + static_cast<long>(k), full[k]) != full.begin() + static_cast<long>(k))
      continue;
    INFO("stop id " << full[k] << " at step " << k);
    const auto sync = gen(kPrompt, 12, 4, true, {full[k]});
    const auto async = gen(kPrompt, 12, 4, false, {full[k]});
    REQUIRE(sync.stopped);
    CHECK(async.stopped);
    CHECK(async.generated_ids == sync.generated_ids);
    CHECK(async.generated_ids == std::vector<int64_t>(full.begin(), full.begin() + static_cast<long>(k) + 1));
    CHECK(async.surplus_steps == run::kDecodeLookahead - 1);
    CHECK(sync.surplus_steps == 0);
  }
}

TEST_CASE("asynchronous decode with --steps 1 issues one step", "[run][decode_loop]") {
  for (const auto& prompt : std::vector<std::vector<int64_t>>{kPrompt, {100}}) {
    const auto sync = gen(prompt, 1, 512, true);
    const auto async = gen(prompt, 1, 512, false);
    CHECK(async.generated_ids == sync.generated_ids);
    CHECK(async.generated_ids.size() == 1);
    CHECK(async.surplus_steps == 0);
    CHECK(async.decode_steps == 0);
    CHECK(async.stats.steady_steps == 0);
  }
}

TEST_CASE("asynchronous decode up to the capacity gives the synchronous ids", "[run][decode_loop]") {
  // prompt + steps == capacity: the last step issued writes the cache's last slot.
  const uint64_t capacity = 48;
  const auto sync = gen(kPrompt, capacity - kPrompt.size(), 8, true, {}, capacity);
  const auto async = gen(kPrompt, capacity - kPrompt.size(), 8, false, {}, capacity);
  CHECK(async.generated_ids == sync.generated_ids);
  CHECK(async.generated_ids.size() == capacity - kPrompt.size());
}

TEST_CASE("a decode step writes nothing from the host and waits for nothing in steady state",
          "[run][decode_loop]") {
  CountedModel m = load_counted(256);
  const run::Qwen3Contract& c = m.contract;
  run::Qwen3Driver driver(*m.exe, c, 8);
  REQUIRE(driver.write_block_table().ok());
  auto chunks = driver.prefill(std::span(kPrompt).first(kPrompt.size() - 1), 0);
  REQUIRE(chunks.ok());
  REQUIRE(driver.start_decode(kPrompt.back(), kPrompt.size() - 1).ok());
  const uint64_t writes_after_start = m.counts->to_device;
  const uint64_t launches_per_run = m.exe->staged(c.decode).launches.size();
  // Enqueue one step ahead, then: enqueue k + 1, take k.
  REQUIRE(driver.enqueue_decode().ok());
  for (int k = 0; k < 8; ++k) {
    const uint64_t launches = m.counts->launches;
    REQUIRE(driver.enqueue_decode().ok());
    CHECK(m.counts->launches - launches == launches_per_run);
    auto id = driver.next_decoded();
    REQUIRE(id.ok());
    CHECK(driver.in_flight() == 1);
  }
  REQUIRE(driver.discard_in_flight().ok());
  CHECK(m.counts->to_device == writes_after_start);  // no host -> device copy after the first step's inputs
  REQUIRE(driver.records().size() == 8);
  for (const run::DecodeStepRecord& r : driver.records()) {
    CHECK(r.host_writes == 0);
    CHECK(r.host_waits == 0);  // the next step was always queued behind the awaited token
    CHECK(r.launches == launches_per_run);
    CHECK(r.gpu_busy_ms < 0);  // the cpu device has no timers
  }
  // The same figures through generate's report fields.
  run::GenerateRequest req{kPrompt, 10, 8, 256, {}, nullptr};
  auto r = run::generate(*m.exe, c, req);
  REQUIRE(r.ok());
  CHECK(r->stats.steady_steps == 10 - run::kDecodeWarmupSteps - run::kDecodeDrainSteps);
  CHECK(r->stats.host_writes_per_step == 0);
  CHECK(r->stats.host_waits_per_step == 0);
  CHECK(r->stats.launches_per_step == static_cast<double>(launches_per_run));
  CHECK_FALSE(r->stats.gpu_timed);
  // The synchronous loop writes the 4 step inputs and waits once per step: the test has teeth.
  req.sync = true;
  auto s = run::generate(*m.exe, c, req);
  REQUIRE(s.ok());
  CHECK(s->generated_ids == r->generated_ids);
  CHECK(s->stats.host_writes_per_step == 4);
  CHECK(s->stats.host_waits_per_step == 1);
}

TEST_CASE("the decode program leaves the next step's inputs in its carries", "[run][decode_loop]") {
  TinyModel m = load_tiny_model(256);
  const run::Qwen3Contract& c = m.contract;
  run::Qwen3Driver driver(*m.exe, c, 512);
  REQUIRE(driver.write_block_table().ok());
  REQUIRE(driver.prefill(std::span(kPrompt).first(kPrompt.size() - 1), 0).ok());
  const uint64_t pos = kPrompt.size() - 1;  // 21
  REQUIRE(driver.start_decode(kPrompt.back(), pos).ok());
  for (uint64_t k = 0; k < 3; ++k) {
    REQUIRE(driver.enqueue_decode().ok());
    auto id = driver.next_decoded();
    REQUIRE(id.ok());
    INFO("step " << k);
    CHECK(read<int64_t>(*m.exe, c.token_ids) == *id);
    CHECK(read<int64_t>(*m.exe, c.positions) == static_cast<int64_t>(pos + k + 1));
    CHECK(read<int64_t>(*m.exe, c.slot_mapping) == static_cast<int64_t>(pos + k + 1));  // identity table
    CHECK(read<int32_t>(*m.exe, c.seq_lens) == static_cast<int32_t>(pos + k + 2));
  }
}

TEST_CASE("surplus steps after a stop change nothing a later generation sees", "[run][decode_loop]") {
  const auto full = gen(kPrompt, 10, 512, true).generated_ids;
  TinyModel m = load_tiny_model();
  run::GenerateRequest stop{kPrompt, 10, 512, m.capacity, {full[2]}, nullptr};
  auto first = run::generate(*m.exe, m.contract, stop);
  REQUIRE(first.ok());
  CHECK(first->surplus_steps == 1);
  // Same executable, next sequence: the surplus step's KV slot and carries are rewritten.
  auto again = run::generate(*m.exe, m.contract, {kPrompt, 10, 512, m.capacity, {}, nullptr});
  REQUIRE(again.ok());
  CHECK(again->generated_ids == full);
}

TEST_CASE("asynchronous readback: slots, sizes and the wait count", "[run][decode_loop]") {
  TinyModel m = load_tiny_model(64);
  load::Executable& exe = *m.exe;
  const run::Qwen3Contract& c = m.contract;
  const int32_t cu[2] = {0, 7};
  REQUIRE(exe.write_input(c.cu_seqlens_q, std::span(reinterpret_cast<const uint8_t*>(cu), 8)).ok());
  REQUIRE(exe.read_buffer_async(c.cu_seqlens_q, 3, 8).ok());
  const uint64_t waits = exe.traffic().host_waits;
  auto bytes = exe.wait_readback(3);
  REQUIRE(bytes.ok());
  int32_t got[2];
  std::memcpy(got, bytes->data(), 8);
  CHECK(got[1] == 7);
  CHECK(exe.traffic().host_waits == waits + 1);  // no program run queued behind it: a host wait
  auto big = exe.read_buffer_async(c.cu_seqlens_q, 0, 9);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message == "reading 9 B from buffer 'cu_seqlens_q' of 8 B");
  auto slot = exe.read_buffer_async(c.cu_seqlens_q, load::kReadbackSlots, 8);
  REQUIRE_FALSE(slot.ok());
  CHECK(slot.error().message == "readback slot 16 is not below 16");
  auto wide = exe.read_buffer_async(c.logits, 0, load::kReadbackSlotBytes + 1);
  REQUIRE_FALSE(wide.ok());
  CHECK(wide.error().message == "readback of 257 B exceeds a slot's 256 B");
}

TEST_CASE("run_bench hands each test to the caller as soon as its repetitions are done", "[run][bench][progress]") {
  // kern-run bench prints each row from this callback (issue 25): every
  // test arrives once, in order, with all its timed repetitions.
  TinyModel m = load_tiny_model();
  run::BenchPlan plan;
  plan.prompt_lengths = {8, 4};
  plan.gen_lengths = {4};
  plan.reps = 2;
  plan.warmup = 1;
  plan.chunk = 4;
  std::vector<std::string> seen;
  auto tests = run::run_bench(*m.exe, m.contract, plan, nullptr, [&](const run::BenchTest& t) {
    CHECK(t.ms.size() == 2);
    seen.push_back(t.name());
  });
  REQUIRE(tests.ok());
  CHECK(seen == std::vector<std::string>{"pp8", "pp4", "tg4"});
}
