// Adversarial .kplan files against the loader's plan reader (kern-load
// PlanFile::from_bytes, SPEC §5): a plan kern-verify wrote from the base
// manifest, then damaged — truncated at every byte, offsets pointing outside
// the buffer, vector counts that overflow, indices past their tables, and
// every byte overwritten. Each damaged plan must be rejected with an error
// that names the file (or, for a harmless change, accepted); none may crash
// or throw. The sanitizer-instrumented variant is the plan_fuzz target.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "common/file_util.h"
#include "common/manifest_reader.h"
#include "common/plan_checksum.h"
#include "common/plan_format.h"
#include "kern-load/plan_file.h"
#include "kern-verify/lower.h"
#include "kern-verify/plan_dump.h"
#include "kern-verify/verifier.h"

namespace {

using Bytes = std::vector<uint8_t>;

/// The plan kern-verify writes for test/verify/base_manifest.json.
const Bytes& base_plan() {
  static const Bytes plan = [] {
    auto text = kern::read_file(KERN_SOURCE_ROOT "/test/verify/base_manifest.json");
    REQUIRE(text.ok());
    kern::SourceFile file("base_manifest.json", text.value());
    kern::DiagnosticEngine diag;
    auto m = kern::read_manifest(file, diag);
    REQUIRE(m);
    auto v = kern::verify::verify(*m, diag);
    REQUIRE(v);
    auto bytes = kern::verify::lower(*v, file.text());
    REQUIRE(bytes.ok());
    return Bytes(bytes.value().begin(), bytes.value().end());
  }();
  return plan;
}

kern::Result<kern::load::PlanFile> open(const Bytes& b) {
  return kern::load::PlanFile::from_bytes(std::span<const uint8_t>(b.data(), b.size()), "bad.kplan");
}

/// `b` with its checksum trailer replaced by one that matches the damaged
/// bytes: what a hostile writer produces, so the checks behind the checksum
/// are reached.
Bytes reseal(Bytes b) {
  REQUIRE(b.size() >= kern::kPlanTrailerBytes);
  b.resize(b.size() - kern::kPlanTrailerBytes);
  auto trailer = kern::plan_trailer(b);
  REQUIRE(trailer.ok());
  b.insert(b.end(), trailer->begin(), trailer->end());
  return b;
}

/// Rejected, with a message that starts with the file name and says
/// something; damage inside the body (`sealed_too`) is rejected also under a
/// valid checksum.
void require_rejected(const Bytes& b, const std::string& what, bool sealed_too = true) {
  INFO(what);
  for (const Bytes& candidate : {b, sealed_too ? reseal(b) : b}) {
    auto r = open(candidate);
    REQUIRE_FALSE(r.ok());
    const std::string& msg = r.error().message;
    CHECK(msg.rfind("bad.kplan", 0) == 0);
    CHECK(msg.size() > std::string("bad.kplan: ").size() + 10);
  }
}

void put_u32(Bytes& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }

/// Byte offset of `p` (a pointer into `base_plan()`-shaped bytes at `data`).
size_t offset_of(const void* p, const Bytes& b) {
  return static_cast<size_t>(static_cast<const uint8_t*>(p) - b.data());
}

const kern::plan::Plan& root(const Bytes& b) { return *kern::plan::GetPlan(b.data()); }

/// Address of a table's field (generated tables inherit flatbuffers::Table privately).
size_t field_offset(const void* table, flatbuffers::voffset_t field, const Bytes& b) {
  const auto* t = reinterpret_cast<const flatbuffers::Table*>(table);
  const uint8_t* at = t->GetAddressOf(field);
  REQUIRE(at != nullptr);
  return offset_of(at, b);
}

}  // namespace

TEST_CASE("the base plan itself is accepted", "[plan][adversarial]") {
  REQUIRE(open(base_plan()).ok());
}

TEST_CASE("a plan truncated at every byte is rejected with an error", "[plan][adversarial]") {
  const Bytes& plan = base_plan();
  for (size_t n = 0; n < plan.size(); ++n) {
    Bytes cut(plan.begin(), plan.begin() + static_cast<std::ptrdiff_t>(n));
    // The checksum trailer is at the end: every cut loses it.
    require_rejected(cut, "truncated to " + std::to_string(n) + " of " + std::to_string(plan.size()) + " bytes",
                     false);
  }
}

TEST_CASE("kern-verify --dump rejects a plan truncated at every byte", "[plan][adversarial]") {
  const Bytes& plan = base_plan();
  REQUIRE(kern::verify::dump_plan(std::span<const uint8_t>(plan.data(), plan.size())).ok());
  for (size_t n = 0; n < plan.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    auto r = kern::verify::dump_plan(std::span<const uint8_t>(plan.data(), n));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.rfind("not a valid plan: ", 0) == 0);
  }
}

TEST_CASE("a root offset past the end of the buffer is rejected", "[plan][adversarial]") {
  for (uint32_t target : {uint32_t(base_plan().size()), uint32_t(base_plan().size() + 4), 0x7FFFFFF0u, 0xFFFFFFFCu}) {
    Bytes b = base_plan();
    put_u32(b, 0, target);
    require_rejected(b, "root offset " + std::to_string(target));
  }
}

TEST_CASE("table and vector offsets pointing outside the buffer are rejected", "[plan][adversarial]") {
  const Bytes& good = base_plan();
  const auto& p = root(good);
  // The uoffset fields that lead from the root to its vectors and to a nested table.
  std::vector<std::pair<std::string, size_t>> fields = {
      {"Plan.symbols", field_offset(&p, kern::plan::Plan::VT_SYMBOLS, good)},
      {"Plan.buffers", field_offset(&p, kern::plan::Plan::VT_BUFFERS, good)},
      {"Plan.programs", field_offset(&p, kern::plan::Plan::VT_PROGRAMS, good)},
      {"Plan.model", field_offset(&p, kern::plan::Plan::VT_MODEL, good)},
      {"Buffer.shape", field_offset(p.buffers()->Get(0), kern::plan::Buffer::VT_SHAPE, good)},
      {"Step.grid_x", field_offset(p.steps()->Get(0), kern::plan::Step::VT_GRID_X, good)},
  };
  for (const auto& [name, at] : fields) {
    for (uint32_t far : {uint32_t(good.size()), 0x40000000u, 0xFFFFFFF0u}) {
      Bytes b = good;
      put_u32(b, at, far);
      require_rejected(b, name + " offset set to " + std::to_string(far));
    }
  }
  // A table whose vtable (a signed offset back from the table) lies outside.
  for (int32_t vt : {int32_t(-0x40000000), int32_t(0x40000000), int32_t(good.size())}) {
    Bytes b = good;
    const size_t table = offset_of(p.symbols()->Get(0), good);
    std::memcpy(b.data() + table, &vt, 4);
    require_rejected(b, "Symbol vtable offset " + std::to_string(vt));
  }
}

TEST_CASE("vector and string counts that overflow are rejected", "[plan][adversarial]") {
  const Bytes& good = base_plan();
  const auto& p = root(good);
  std::vector<std::pair<std::string, size_t>> counts = {
      {"Plan.symbols", offset_of(p.symbols(), good)},
      {"Plan.programs", offset_of(p.programs(), good)},
      {"Program.launches", offset_of(p.programs()->Get(0)->launches(), good)},
      {"Expr.nodes (16-byte structs)", offset_of(p.steps()->Get(0)->grid_x()->nodes(), good)},
      {"Kernel.steps", offset_of(p.kernels()->Get(0)->steps(), good)},
      {"Symbol.name (string)", offset_of(p.symbols()->Get(0)->name(), good)},
      {"Plan.manifest_sha256", offset_of(p.manifest_sha256(), good)},
  };
  // 0x40000000 x 4-byte offsets and 0x10000000 x 16-byte nodes wrap 32 bits.
  for (const auto& [name, at] : counts) {
    for (uint32_t n : {0x10000000u, 0x40000000u, 0x80000000u, 0xFFFFFFFFu}) {
      Bytes b = good;
      put_u32(b, at, n);
      require_rejected(b, name + " count set to " + std::to_string(n));
    }
  }
}

TEST_CASE("indices past their tables are rejected by validation", "[plan][adversarial]") {
  const Bytes& good = base_plan();
  const auto& p = root(good);
  // FlatBuffers omits fields equal to their default (0): use ones written out.
  std::vector<std::pair<std::string, size_t>> indices = {
      {"Kernel.steps[0]", offset_of(p.kernels()->Get(0)->steps()->Data(), good)},
  };
  for (const auto* prog : *p.programs()) {
    for (const auto* launch : *prog->launches()) {
      if (launch->step() != 0 && indices.size() < 2) {
        indices.emplace_back("Launch.step", field_offset(launch, kern::plan::Launch::VT_STEP, good));
      }
      for (const auto* arg : *launch->args()) {
        if (arg->kind() == kern::plan::ArgKind::buffer && arg->index() != 0 && indices.size() < 3) {
          indices.emplace_back("LaunchArg.index", field_offset(arg, kern::plan::LaunchArg::VT_INDEX, good));
        }
      }
    }
  }
  REQUIRE(indices.size() == 3);
  for (const auto& [name, at] : indices) {
    Bytes b = good;
    put_u32(b, at, 0xFFFFFFF0u);
    require_rejected(b, name + " set to 0xFFFFFFF0");
  }
}

TEST_CASE("a plan with any single byte overwritten never crashes the reader", "[plan][adversarial]") {
  const Bytes& good = base_plan();
  size_t rejected = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t v : {uint8_t{0x00}, uint8_t{0xFF}, uint8_t{0x80}}) {
      if (good[i] == v) continue;
      Bytes b = good;
      b[i] = v;
      CHECK_FALSE(open(b).ok());  // the checksum
      auto r = open(reseal(b));  // accepted (a literal, a name byte) or rejected; never a crash or exception
      if (!r.ok()) {
        ++rejected;
        CHECK_FALSE(r.error().message.empty());
      }
    }
  }
  CHECK(rejected > good.size() / 4);  // most of a plan is structure
}

namespace {

/// The base plan with step 0's grid_x expression pointing at a one-node
/// ExprNode vector appended after the body whose structs start 4 bytes off
/// their 8-byte alignment, resealed: the shape of the plan_fuzz finding
/// regressions/plan/misaligned-expr-nodes.kplan (the FlatBuffers Verifier
/// checks the vector's bounds, not its structs' alignment).
Bytes misaligned_expr_plan() {
  Bytes b(base_plan().begin(), base_plan().end() - kern::kPlanTrailerBytes);
  const size_t field = field_offset(root(b).steps()->Get(0)->grid_x(), kern::plan::Expr::VT_NODES, b);
  // The vector's length word sits where its data would be 8-aligned, moved by 4.
  while (b.size() % 8 != 0) b.push_back(0);
  const size_t vec = b.size();  // length at 8k: data at 8k + 4, misaligned
  const uint8_t node[20] = {1, 0, 0, 0, /* op const_ */ 0, 0, 0, 0, 0, 0, 0, 0, /* operand 1 */ 1, 0, 0, 0, 0, 0, 0, 0};
  b.insert(b.end(), node, node + sizeof node);
  put_u32(b, field, static_cast<uint32_t>(vec - field));
  b.resize(b.size() + kern::kPlanTrailerBytes);
  return reseal(b);
}

}  // namespace

TEST_CASE("expression nodes that are not 8-byte aligned are rejected under a valid checksum", "[plan][adversarial]") {
  const Bytes b = misaligned_expr_plan();
  auto r = open(b);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("expression nodes are not 8-byte aligned") != std::string::npos);
  auto dump = kern::verify::dump_plan(std::span<const uint8_t>(b.data(), b.size()));
  CHECK((!dump.ok() || dump.value().find("<misaligned>") != std::string::npos));
  // The checked-in regression file (replayed by the fuzzers) is this plan;
  // KERN_REGEN_REGRESSIONS=1 rewrites it (after a plan format change).
  const std::string path = KERN_SOURCE_ROOT "/test/fuzz/regressions/plan/misaligned-expr-nodes.kplan";
  if (std::getenv("KERN_REGEN_REGRESSIONS") != nullptr)
    REQUIRE(kern::write_file_atomic(path, std::string(b.begin(), b.end())).ok());
  auto file = kern::read_file(path);
  REQUIRE(file.ok());
  CHECK(Bytes(file->begin(), file->end()) == b);
}
