// Adversarial .kplan files against the loader's plan reader (kern-load
// PlanFile::from_bytes, SPEC §5): a plan kern-verify wrote from the base
// manifest, then damaged — truncated at every byte, offsets pointing outside
// the buffer, vector counts that overflow, indices past their tables, and
// every byte overwritten. Each damaged plan must be rejected with an error
// that names the file (or, for a harmless change, accepted); none may crash
// or throw. The sanitizer-instrumented variant is the plan_fuzz target.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "common/file_util.h"
#include "common/manifest_reader.h"
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

/// Rejected, with a message that starts with the file name and says something.
void require_rejected(const Bytes& b, const std::string& what) {
  INFO(what);
  auto r = open(b);
  REQUIRE_FALSE(r.ok());
  const std::string& msg = r.error().message;
  CHECK(msg.rfind("bad.kplan", 0) == 0);
  CHECK(msg.size() > std::string("bad.kplan: ").size() + 10);
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
    // PlanFile rejects any size that is not a multiple of 4 (a finished
    // FlatBuffers buffer's is). A cut to a multiple of 4 that drops only
    // trailing zero padding leaves every byte the Verifier reads: either
    // outcome is sound there. Every other truncation must be rejected.
    bool only_padding = true;
    for (size_t i = n; i < plan.size(); ++i) only_padding = only_padding && plan[i] == 0;
    if (only_padding && n % 4 == 0 && n > plan.size() - 8) continue;
    require_rejected(cut, "truncated to " + std::to_string(n) + " of " + std::to_string(plan.size()) + " bytes");
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
      auto r = open(b);  // accepted (a literal, a name byte) or rejected; never a crash or exception
      if (!r.ok()) {
        ++rejected;
        CHECK_FALSE(r.error().message.empty());
      }
    }
  }
  CHECK(rejected > good.size() / 4);  // most of a plan is structure
}
