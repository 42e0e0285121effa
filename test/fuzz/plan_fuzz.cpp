// libFuzzer target: the plan reader on arbitrary bytes. PlanFile::from_bytes
// (identifier, format version, checksum trailer, FlatBuffers Verifier,
// validate_plan) must reject hostile input with an error, never crash, read
// out of bounds or overflow; a plan it accepts must then be readable end to
// end, which `kern-verify --dump` (dump_plan) does field by field. Each input
// is tried twice: as given (the checksum rejects nearly every mutation) and
// with a matching trailer appended (what a hostile writer produces), so the
// checks behind the checksum are fuzzed too. Built with clang's
// -fsanitize=fuzzer,address,undefined by test/fuzz/build.sh.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/plan_checksum.h"
#include "kern-load/plan_file.h"
#include "kern-verify/plan_dump.h"

namespace {

void read_plan(std::span<const uint8_t> bytes) {
  auto plan = kern::load::PlanFile::from_bytes(bytes, "fuzz.kplan");
  (void)kern::verify::dump_plan(bytes);
  if (!plan.ok()) return;
  // Name lookups walk every table of a validated plan.
  (void)plan.value().find_program("decode");
  (void)plan.value().find_buffer("x");
  (void)plan.value().find_symbol("tokens");
  (void)plan.value().find_state("kv");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  read_plan(bytes);
  // A seed written by kern-verify ends in its trailer: strip it before sealing.
  if (auto body = kern::check_plan_trailer(bytes, ""); body.ok()) bytes = *body;
  std::vector<uint8_t> sealed(bytes.begin(), bytes.end());
  auto trailer = kern::plan_trailer(sealed);
  if (!trailer.ok()) return 0;
  sealed.insert(sealed.end(), trailer->begin(), trailer->end());
  read_plan(sealed);
  return 0;
}
