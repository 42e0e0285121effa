// Sampling through the engine on the tiny model (cpu device): the decode
// program's sample dispatch (docs/kernels.md §17) fed by the model runner's
// per-row sampling inputs. Ids are compared exactly (the cpu device is
// deterministic). The distribution itself is tested on the kernel
// (test/kernels/sample_test.cpp); here: that the engine writes the inputs
// the kernel reads, once per change, and that a seeded sequence repeats.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "test/engine/tiny_model.h"

using namespace kern;
using namespace kern::test;

namespace {

const std::vector<int64_t> kSamplingPrompt = {3, 17, 99, 200, 5, 42, 7, 8, 9, 10, 11, 12};
constexpr uint64_t kSteps = 24;

engine::Request sampled(engine::SamplingParams p, bool sync = false) {
  engine::Request r = request(kSamplingPrompt, kSteps, 5, {}, sync);
  r.sampling = p;
  return r;
}

std::vector<int64_t> ids_of(engine::Model& model, const engine::Request& r) {
  auto out = run_generate(model, r);
  if (!out.ok()) FAIL(out.error().message);
  REQUIRE(out->generated_ids.size() == kSteps);
  return out->generated_ids;
}

}  // namespace

TEST_CASE("a seeded sampled sequence repeats its ids, in both decode loops; other seeds and greedy differ",
          "[engine][sampling]") {
  TinyModel m = load_tiny_model();
  const engine::SamplingParams hot{.temperature = 3.0f, .seed = 1234};
  const auto first = ids_of(*m.model, sampled(hot));
  CHECK(ids_of(*m.model, sampled(hot)) == first);
  CHECK(ids_of(*m.model, sampled(hot, /*sync=*/true)) == first);  // host-written positions: the same counters
  TinyModel fresh = load_tiny_model();
  CHECK(ids_of(*fresh.model, sampled(hot)) == first);  // another executable
  engine::SamplingParams other = hot;
  other.seed = 1235;
  CHECK(ids_of(*m.model, sampled(other)) != first);
  const auto greedy = ids_of(*m.model, request(kSamplingPrompt, kSteps, 5));
  CHECK(greedy != first);
  // Flat sampling visits many ids; greedy decoding of the tiny model few.
  CHECK(std::set<int64_t>(first.begin(), first.end()).size() > 8);
}

TEST_CASE("top_k 1, min_p 1 and a tiny top_p keep only the top logit's ids; greedy after sampling is greedy again",
          "[engine][sampling]") {
  // Each keeps exactly the ids tied at the top logit (one key of the
  // kernel's histogram), so with one seed all three draw the same ids: the
  // greedy ids except where bf16 logits tie at the top (the tiny model's
  // step 5 has logit 12.1875 at ids 107 and 244; greedy takes 107, a draw
  // either), which the kernel tests cover (sample_test.cpp).
  TinyModel m = load_tiny_model();
  const auto greedy = ids_of(*m.model, request(kSamplingPrompt, kSteps, 5));
  const auto top_k = ids_of(*m.model, sampled({.temperature = 2.0f, .top_k = 1, .seed = 9}));
  CHECK(ids_of(*m.model, sampled({.temperature = 2.0f, .min_p = 1.0f, .seed = 9})) == top_k);
  CHECK(ids_of(*m.model, sampled({.temperature = 2.0f, .top_p = 1e-6f, .seed = 9})) == top_k);
  CHECK(std::equal(greedy.begin(), greedy.begin() + 4, top_k.begin()));  // the steps before the tie
  CHECK(ids_of(*m.model, sampled({.temperature = 3.0f, .seed = 9})) != top_k);
  // The runner wrote temperature 0 back for the greedy request.
  CHECK(ids_of(*m.model, request(kSamplingPrompt, kSteps, 5)) == greedy);
}

TEST_CASE("the sampling inputs are written when a request's parameters change, never per decode step",
          "[engine][sampling]") {
  TinyModel m = load_tiny_model();
  auto writes = [&](const engine::Request& r) {
    const uint64_t before = m.exe->traffic().host_writes;
    auto out = run_generate(*m.model, r);
    if (!out.ok()) FAIL(out.error().message);
    CHECK(out->stats.host_writes_per_step == 0);  // the asynchronous loop stays device-resident
    return m.exe->traffic().host_writes - before;
  };
  const engine::Request greedy = request(kSamplingPrompt, kSteps, 5);
  const uint64_t base = writes(greedy);  // block table, prefill chunks, the first decode step's inputs
  CHECK(writes(greedy) == base);
  const engine::Request hot = sampled({.temperature = 1.5f, .top_k = 40, .top_p = 0.9f, .seed = 3});
  CHECK(writes(hot) == base + 5);  // the five sampling inputs, once
  CHECK(writes(hot) == base);      // unchanged: none
  engine::Request reseeded = hot;
  reseeded.sampling.seed = 4;
  CHECK(writes(reseeded) == base + 5);
  CHECK(writes(greedy) == base + 5);  // back to temperature 0
  CHECK(writes(greedy) == base);
}

TEST_CASE("a sampled sequence's ids do not depend on the sequences before it", "[engine][sampling]") {
  TinyModel a = load_tiny_model();
  const engine::Request hot = sampled({.temperature = 1.2f, .top_p = 0.95f, .min_p = 0.01f, .seed = 77});
  const auto alone = ids_of(*a.model, hot);
  TinyModel b = load_tiny_model();
  (void)ids_of(*b.model, sampled({.temperature = 0.7f, .top_k = 3, .seed = 5}));
  (void)ids_of(*b.model, request({1, 2, 3}, kSteps, 5));
  CHECK(ids_of(*b.model, hot) == alone);
}

TEST_CASE("sampling is refused with speculative decoding and on a plan whose decode does not sample",
          "[engine][sampling]") {
  TinyModel m = load_tiny_model();
  engine::Request r = sampled({.temperature = 0.5f, .seed = 1});
  CHECK(engine::check_request(m.contract, m.capacity, r).ok());
  CHECK(m.contract.sampling_rows == 8);
  r.speculative = true;
  Status s = engine::check_request(m.contract, m.capacity, r);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kUsage);
  CHECK(s.error().message ==
        "speculative decoding is greedy only: temperature 0.5 asks for sampling (use temperature 0, or plain "
        "decoding)");
  engine::CausalLmContract older = m.contract;
  older.sampling_rows = 0;  // a manifest from before device sampling
  r.speculative = false;
  s = engine::check_request(older, m.capacity, r);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message ==
        "sampling (temperature 0.5) needs a plan whose decode program samples; this one has no sampling inputs "
        "(sample_temperature ...): regenerate its manifest with examples/gen_qwen3_manifest.py");
  CHECK(engine::check_request(older, m.capacity, request(kSamplingPrompt, kSteps, 5)).ok());  // greedy still runs
}
