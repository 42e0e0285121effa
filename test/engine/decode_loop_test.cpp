// The device-resident decode loop (docs/runtime.md, "Asynchronous decode";
// docs/causal-lm-manifest.md, "Who writes what") on the tiny model and the cpu
// device: the asynchronous loop gives exactly the synchronous loop's ids for
// every prompt, chunk size and stop condition; a decode step writes nothing
// from the host (counted at the device, below the executable); the decode
// program's advance leaves the next step's inputs in the carries; surplus
// steps after a stop change nothing later runs see.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "kern-engine/model_runner.h"
#include "test/engine/tiny_model.h"

using namespace kern;
using namespace kern::test;

namespace {

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
  TinyModel tiny;
};

CountedModel load_counted(uint64_t capacity) {
  CountedModel m;
  m.tiny = load_tiny_model(capacity, std::make_unique<CountingDevice>(m.counts));
  return m;
}

/// Generates on a fresh tiny model (capacity `capacity`, 0 = default).
engine::SequenceResult gen(const std::vector<int64_t>& prompt, uint64_t steps, uint64_t chunk, bool sync,
                           std::vector<int64_t> stop_ids = {}, uint64_t capacity = 0) {
  TinyModel m = load_tiny_model(capacity);
  auto out = run_generate(*m.model, request(prompt, steps, chunk, std::move(stop_ids), sync));
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
  const std::vector<std::vector<int64_t>> prompts = {kTinyPrompt, {100}, {7, 7}, std::vector<int64_t>(40, 250)};
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
  const auto full = gen(kTinyPrompt, 12, 512, true).generated_ids;
  // Stop at every step index where the id has not occurred before: the
  // step after it is already queued (lookahead 2) unless it is the last.
  for (size_t k = 0; k + 1 < full.size(); ++k) {
    if (std::find(full.begin(), full.begin() + static_cast<long>(k), full[k]) != full.begin() + static_cast<long>(k))
      continue;
    INFO("stop id " << full[k] << " at step " << k);
    const auto sync = gen(kTinyPrompt, 12, 4, true, {full[k]});
    const auto async = gen(kTinyPrompt, 12, 4, false, {full[k]});
    REQUIRE(sync.stopped);
    CHECK(async.stopped);
    CHECK(async.generated_ids == sync.generated_ids);
    CHECK(async.generated_ids == std::vector<int64_t>(full.begin(), full.begin() + static_cast<long>(k) + 1));
    CHECK(async.surplus_steps == engine::kDecodeLookahead - 1);
    CHECK(sync.surplus_steps == 0);
  }
}

TEST_CASE("asynchronous decode with --steps 1 issues one step", "[run][decode_loop]") {
  for (const auto& prompt : std::vector<std::vector<int64_t>>{kTinyPrompt, {100}}) {
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
  const auto sync = gen(kTinyPrompt, capacity - kTinyPrompt.size(), 8, true, {}, capacity);
  const auto async = gen(kTinyPrompt, capacity - kTinyPrompt.size(), 8, false, {}, capacity);
  CHECK(async.generated_ids == sync.generated_ids);
  CHECK(async.generated_ids.size() == capacity - kTinyPrompt.size());
}

TEST_CASE("a decode step writes nothing from the host and waits for nothing in steady state",
          "[run][decode_loop]") {
  CountedModel cm = load_counted(256);
  TinyModel& m = cm.tiny;
  const engine::CausalLmContract& c = m.contract;
  engine::ModelRunner& driver = m.model->runner();
  REQUIRE(driver.write_block_table().ok());
  auto chunks = driver.prefill(std::span(kTinyPrompt).first(kTinyPrompt.size() - 1), 0, 8);
  REQUIRE(chunks.ok());
  REQUIRE(driver.start_decode(kTinyPrompt.back(), kTinyPrompt.size() - 1).ok());
  const uint64_t writes_after_start = cm.counts->to_device;
  const uint64_t launches_per_run = m.exe->staged(c.decode).launches.size();
  // Enqueue one step ahead, then: enqueue k + 1, take k.
  REQUIRE(driver.enqueue_decode().ok());
  for (int k = 0; k < 8; ++k) {
    const uint64_t launches = cm.counts->launches;
    REQUIRE(driver.enqueue_decode().ok());
    CHECK(cm.counts->launches - launches == launches_per_run);
    auto id = driver.next_decoded();
    REQUIRE(id.ok());
    CHECK(driver.in_flight() == 1);
  }
  REQUIRE(driver.discard_in_flight().ok());
  CHECK(cm.counts->to_device == writes_after_start);  // no host -> device copy after the first step's inputs
  REQUIRE(driver.records().size() == 8);
  for (const engine::DecodeStepRecord& r : driver.records()) {
    CHECK(r.host_writes == 0);
    CHECK(r.host_waits == 0);  // the next step was always queued behind the awaited token
    CHECK(r.launches == launches_per_run);
    CHECK(r.gpu_busy_ms < 0);  // the cpu device has no timers
  }
  // The same figures through generate's report fields.
  engine::Request req = request(kTinyPrompt, 10, 8);
  auto r = run_generate(*m.model, req);
  REQUIRE(r.ok());
  // 9 decode steps (prefill_last gives the first of the 10 ids).
  CHECK(r->stats.steady_steps == 9 - engine::kDecodeWarmupSteps - engine::kDecodeDrainSteps);
  CHECK(r->stats.host_writes_per_step == 0);
  CHECK(r->stats.host_waits_per_step == 0);
  CHECK(r->stats.launches_per_step == static_cast<double>(launches_per_run));
  CHECK_FALSE(r->stats.gpu_timed);
  // The synchronous loop writes the 4 step inputs and waits once per step: the test has teeth.
  req.sync = true;
  auto s = run_generate(*m.model, req);
  REQUIRE(s.ok());
  CHECK(s->generated_ids == r->generated_ids);
  CHECK(s->stats.host_writes_per_step == 4);
  CHECK(s->stats.host_waits_per_step == 1);
}

TEST_CASE("the decode program leaves the next step's inputs in its carries", "[run][decode_loop]") {
  TinyModel m = load_tiny_model(256);
  const engine::CausalLmContract& c = m.contract;
  engine::ModelRunner& driver = m.model->runner();
  REQUIRE(driver.write_block_table().ok());
  REQUIRE(driver.prefill(std::span(kTinyPrompt).first(kTinyPrompt.size() - 1), 0, 512).ok());
  const uint64_t pos = kTinyPrompt.size() - 1;  // 21
  REQUIRE(driver.start_decode(kTinyPrompt.back(), pos).ok());
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
  const auto full = gen(kTinyPrompt, 10, 512, true).generated_ids;
  TinyModel m = load_tiny_model();
  auto first = run_generate(*m.model, request(kTinyPrompt, 10, 512, {full[2]}));
  REQUIRE(first.ok());
  CHECK(first->surplus_steps == 1);
  // Same executable, next sequence: the surplus step's KV slot and carries are rewritten.
  auto again = run_generate(*m.model, request(kTinyPrompt, 10, 512));
  REQUIRE(again.ok());
  CHECK(again->generated_ids == full);
}

TEST_CASE("asynchronous readback: slots, sizes and the wait count", "[run][decode_loop]") {
  TinyModel m = load_tiny_model(64);
  load::Executable& exe = *m.exe;
  const engine::CausalLmContract& c = m.contract;
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
