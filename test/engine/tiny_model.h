// Test helper: the tiny Qwen3 (examples/tiny-qwen3.json compiled by
// kern-verify at build time, examples/tiny-qwen3.safetensors) loaded on the
// cpu reference device as an engine Model. Paths come from the environment
// meson sets: KERN_TINY_PLAN, KERN_TINY_WEIGHTS.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <string>

#include "kern-engine/engine.h"
#include "kern-engine/generate.h"
#include "kern-engine/model.h"
#include "kern-engine/causal_lm_contract.h"
#include "kern-load/cpu_device.h"
#include "kern-load/executable.h"

namespace kern::test {

inline std::string env_path(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) FAIL(std::string(name) + " is not set (run through meson test)");
  return v;
}

/// A loaded tiny model: the engine Model, and its executable, contract and
/// capacity for tests that look below the engine.
struct TinyModel {
  std::unique_ptr<load::Safetensors> weights;
  std::unique_ptr<engine::Model> model;
  load::Executable* exe = nullptr;  ///< model's
  engine::CausalLmContract contract;
  uint64_t capacity = 0;
};

/// Loads plan `plan_env` (an environment variable naming a .kplan) with the
/// weights of `weights_env` (null: deterministic random weights, seed 5) on
/// `device` (default: a cpu device) at `capacity` tokens (0: the default
/// capacity); `speculative` resolves the plan's spec contract.
inline TinyModel load_tiny_model(uint64_t capacity = 0, std::unique_ptr<load::Device> device = nullptr,
                                 const char* plan_env = "KERN_TINY_PLAN", const char* weights_env = "KERN_TINY_WEIGHTS",
                                 bool speculative = false) {
  TinyModel m;
  auto plan = load::PlanFile::open(env_path(plan_env));
  REQUIRE(plan.ok());
  auto c = engine::resolve_causal_lm_contract(plan.value());
  REQUIRE(c.ok());
  m.capacity = capacity ? capacity : engine::default_capacity(c.value());
  load::ExecutableOptions options;
  options.capacity_tokens = m.capacity;
  if (weights_env != nullptr) {
    auto w = load::Safetensors::open(env_path(weights_env));
    REQUIRE(w.ok());
    m.weights = std::make_unique<load::Safetensors>(std::move(w.value()));
  } else {
    options.random_weights_seed = 5;
  }
  auto exe = load::Executable::load(std::move(plan.value()), device ? std::move(device) : load::make_cpu_device(),
                                    m.weights.get(), options, nullptr);
  if (!exe.ok()) FAIL(exe.error().message);
  auto model = engine::Model::adopt(std::move(exe.value()), speculative, m.capacity);
  if (!model.ok()) FAIL(model.error().message);
  m.model = std::move(model.value());
  m.exe = &m.model->executable();
  m.contract = m.model->contract();
  return m;
}

/// One blocking generation on a fresh Engine over `model`.
inline Result<engine::SequenceResult> run_generate(engine::Model& model, engine::Request r,
                                                   engine::GenerateObserver* observer = nullptr) {
  engine::Engine e(model);
  return engine::generate(e, std::move(r), observer);
}

/// A plain request: {id 0, prompt, max_tokens, stop_ids, chunk}.
inline engine::Request request(std::vector<int64_t> prompt, uint64_t steps, uint64_t chunk = 512,
                               std::vector<int64_t> stop_ids = {}, bool sync = false) {
  engine::Request r{0, std::move(prompt), steps, std::move(stop_ids), chunk};
  r.sync = sync;
  return r;
}

/// A 22-token prompt of ids inside the tiny model's vocabulary, shared by the
/// engine tests (longer than their chunk sizes, so prefill takes several chunks).
inline const std::vector<int64_t> kTinyPrompt = {3, 17, 99, 200, 5, 42, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22};

}  // namespace kern::test
