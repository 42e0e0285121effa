// libFuzzer target: the plan reader on arbitrary bytes. PlanFile::from_bytes
// (identifier, format version, FlatBuffers Verifier, validate_plan) must
// reject hostile input with an error, never crash, read out of bounds or
// overflow; a plan it accepts must then be readable end to end, which
// `kern-verify --dump` (dump_plan) does field by field. Built with clang's
// -fsanitize=fuzzer,address,undefined by test/fuzz/build.sh.
#include <cstddef>
#include <cstdint>
#include <span>

#include "kern-load/plan_file.h"
#include "kern-verify/plan_dump.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  auto plan = kern::load::PlanFile::from_bytes(bytes, "fuzz.kplan");
  (void)kern::verify::dump_plan(bytes);
  if (!plan.ok()) return 0;
  // Name lookups walk every table of a validated plan.
  (void)plan.value().find_program("decode");
  (void)plan.value().find_buffer("x");
  (void)plan.value().find_symbol("tokens");
  (void)plan.value().find_state("kv");
  return 0;
}
