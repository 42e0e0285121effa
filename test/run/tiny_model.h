// Test helper: the tiny Qwen3 (examples/tiny-qwen3.json compiled by
// kern-verify at build time, examples/tiny-qwen3.safetensors) loaded on the
// cpu reference device. Paths come from the environment meson sets:
// KERN_TINY_PLAN, KERN_TINY_WEIGHTS.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <string>

#include "kern-load/cpu_device.h"
#include "kern-load/executable.h"
#include "kern-run/generate.h"
#include "kern-run/qwen3_contract.h"

namespace kern::test {

inline std::string env_path(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) FAIL(std::string(name) + " is not set (run through meson test)");
  return v;
}

/// A loaded tiny model with its contract.
struct TinyModel {
  std::unique_ptr<load::Safetensors> weights;
  std::unique_ptr<load::Executable> exe;
  run::Qwen3Contract contract;
  uint64_t capacity = 0;
};

inline TinyModel load_tiny_model(uint64_t capacity = 0) {
  TinyModel m;
  auto plan = load::PlanFile::open(env_path("KERN_TINY_PLAN"));
  REQUIRE(plan.ok());
  auto c = run::resolve_qwen3_contract(plan.value());
  REQUIRE(c.ok());
  m.contract = c.value();
  m.capacity = capacity ? capacity : run::default_capacity(m.contract);
  auto w = load::Safetensors::open(env_path("KERN_TINY_WEIGHTS"));
  REQUIRE(w.ok());
  m.weights = std::make_unique<load::Safetensors>(std::move(w.value()));
  load::ExecutableOptions options;
  options.capacity_tokens = m.capacity;
  auto exe = load::Executable::load(std::move(plan.value()), load::make_cpu_device(), m.weights.get(), options, nullptr);
  if (!exe.ok()) FAIL(exe.error().message);
  m.exe = std::move(exe.value());
  return m;
}

}  // namespace kern::test
