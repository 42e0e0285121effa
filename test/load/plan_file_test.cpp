// PlanFile: FlatBuffers verification, identifier and version checks, and the
// cross-reference validation of plan_validate.h, on the tiny test plan and
// one-field mutations of it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <random>

#include <sys/wait.h>
#include <unistd.h>

#include "common/plan_checksum.h"

#include "kern-load/plan_file.h"
#include "test/load/plan_builder.h"
#include "test/load/test_files.h"

using namespace kern;
using namespace kern::test;
using Catch::Matchers::Contains;

namespace {

Result<load::PlanFile> load_desc(const PlanDesc& d) {
  std::vector<uint8_t> bytes = serialize(d);
  return load::PlanFile::from_bytes(bytes, "tiny.kplan");
}

std::string error_of(const PlanDesc& d) {
  auto r = load_desc(d);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kManifest);
  return r.error().message;
}

}  // namespace

TEST_CASE("a well-formed plan loads and exposes its tables by name", "[load][plan]") {
  auto r = load_desc(tiny_plan());
  REQUIRE(r.ok());
  CHECK(r->plan().buffers()->size() == 4);
  CHECK(r->find_program("main") == 0);
  CHECK(r->find_buffer("out") == 3);
  CHECK(r->find_symbol("tokens") == 0);
  CHECK(r->find_state("kv") == 0);
  CHECK(r->find_buffer("nope") == -1);
}

TEST_CASE("open reads a plan file from disk and a missing file is an io error naming it", "[load][plan]") {
  TempDir dir;
  write_bytes(dir.file("tiny.kplan"), serialize(tiny_plan()));
  auto r = load::PlanFile::open(dir.file("tiny.kplan"));
  REQUIRE(r.ok());
  CHECK(r->path() == dir.file("tiny.kplan"));
  CHECK(r->plan().programs()->Get(0)->name()->str() == "main");

  auto missing = load::PlanFile::open(dir.file("missing.kplan"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::kIo);
  CHECK_THAT(missing.error().message, Contains("missing.kplan") && Contains("cannot open"));
}

TEST_CASE("an open plan is immune to its file being rewritten or truncated (it is read, not mapped)", "[load][plan]") {
  TempDir dir;
  const std::string path = dir.file("tiny.kplan");
  const std::vector<uint8_t> bytes = serialize(tiny_plan());
  write_bytes(path, bytes);
  auto r = load::PlanFile::open(path);
  REQUIRE(r.ok());
  // Rewritten in place at the same size (what `cp other.kplan tiny.kplan`
  // ends with): a shared page cache would show the new bytes.
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    const std::string zeros(bytes.size(), '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  CHECK(r->plan().programs()->Get(0)->name()->str() == "main");
  CHECK(std::equal(bytes.begin(), bytes.end(), r->bytes().begin(), r->bytes().end()));
  // Truncated: a mapping would SIGBUS on the next read; in a child, so the
  // old behaviour fails this test instead of killing it.
  REQUIRE(::truncate(path.c_str(), 0) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    size_t names = 0;
    for (const auto* b : *r->plan().buffers()) names += b->name()->size();
    ::_exit(names > 0 && r->find_buffer("out") == 3 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a plan cut at any length is rejected: the checksum trailer is gone", "[load][plan]") {
  std::vector<uint8_t> bytes = serialize(tiny_plan());
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto r = load::PlanFile::from_bytes(std::span(bytes).first(len), "cut.kplan");
    INFO("length " << len << " of " << bytes.size());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kManifest);
    CHECK_THAT(r.error().message, Contains("cut.kplan: "));
  }
}

TEST_CASE("a plan body cut at any length that cuts data is rejected even under a valid checksum", "[load][plan]") {
  std::vector<uint8_t> sealed = serialize(tiny_plan());
  std::vector<uint8_t> body(sealed.begin(), sealed.end() - kPlanTrailerBytes);
  // FlatBuffers has no length field: dropping only trailing zero bytes (the
  // builder's padding) to a multiple of 4 may leave an intact plan. Any other
  // cut must be rejected.
  size_t data_end = body.size();
  while (data_end > 0 && body[data_end - 1] == 0) --data_end;
  REQUIRE(body.size() - data_end < 8);
  for (size_t len = 0; len < body.size(); ++len) {
    std::vector<uint8_t> cut(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(len));
    cut.resize(len + kPlanTrailerBytes);  // room for reseal's trailer
    auto r = load::PlanFile::from_bytes(reseal(cut), "cut.kplan");
    INFO("length " << len << " of " << body.size());
    if (len >= data_end && len % 4 == 0) continue;
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kManifest);
    CHECK_THAT(r.error().message, Contains("cut.kplan: "));
  }
}

TEST_CASE("2000 random single-byte flips of the tiny plan are all rejected at open", "[load][plan]") {
  const std::vector<uint8_t> good = serialize(tiny_plan());
  std::mt19937 rng(9);
  std::uniform_int_distribution<size_t> pos(0, good.size() - 1);
  std::uniform_int_distribution<int> mask(1, 255);
  for (int n = 0; n < 2000; ++n) {
    std::vector<uint8_t> bytes = good;
    const size_t i = pos(rng);
    bytes[i] ^= static_cast<uint8_t>(mask(rng));
    auto r = load::PlanFile::from_bytes(bytes, "flip.kplan");
    INFO("byte " << i);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::kManifest);
  }
  // Every position, one mask: the trailer, the identifier and the body alike.
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bytes = good;
    bytes[i] ^= 0x01;
    INFO("byte " << i);
    CHECK_FALSE(load::PlanFile::from_bytes(bytes, "flip.kplan").ok());
  }
}

TEST_CASE("bytes appended to a plan, or a missing or wrong trailer, are rejected naming the checksum",
          "[load][plan]") {
  std::vector<uint8_t> bytes = serialize(tiny_plan());
  std::vector<uint8_t> appended = bytes;
  appended.insert(appended.end(), {0, 0, 0, 0});
  auto r = load::PlanFile::from_bytes(appended, "more.kplan");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "more.kplan: no checksum trailer at the end of the file: it was cut short, had bytes appended, or was not "
        "written by kern-verify (recompile the manifest)");
  std::vector<uint8_t> body(bytes.begin(), bytes.end() - kPlanTrailerBytes);
  CHECK_THAT(load::PlanFile::from_bytes(body, "bare.kplan").error().message,
             Contains("bare.kplan: no checksum trailer"));
  bytes[10] ^= 0x40;
  CHECK_THAT(load::PlanFile::from_bytes(bytes, "flip.kplan").error().message,
             Contains("flip.kplan: checksum mismatch: the file changed after kern-verify wrote it (sha256 "));
}

TEST_CASE("flipping any single byte under a valid checksum never crashes the loader", "[load][plan]") {
  std::vector<uint8_t> good = serialize(tiny_plan());
  size_t rejected = 0;
  for (size_t i = 0; i + kPlanTrailerBytes < good.size(); ++i) {
    for (uint8_t mask : {uint8_t{0xff}, uint8_t{0x01}, uint8_t{0x80}}) {
      std::vector<uint8_t> bytes = good;
      bytes[i] ^= mask;
      auto r = load::PlanFile::from_bytes(reseal(bytes), "flip.kplan");
      if (!r.ok()) {
        ++rejected;
        continue;
      }
      // Accepted mutations must still be fully indexable: walk every launch.
      for (const auto* prog : *r->plan().programs())
        for (const auto* l : *prog->launches()) CHECK(l->args()->size() == r->plan().steps()->Get(l->step())->params()->size());
    }
  }
  CHECK(rejected > good.size());  // most flips hit offsets, indices or the identifier
}

TEST_CASE("a file with another identifier is rejected naming the identifier found", "[load][plan]") {
  std::vector<uint8_t> bytes = serialize(tiny_plan());
  bytes[4] = 'X';
  auto r = load::PlanFile::from_bytes(bytes, "x.kplan");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "x.kplan: not a kplan file: file identifier 'XPLN', expected 'KPLN'");

  auto garbage = load::PlanFile::from_bytes(std::vector<uint8_t>(100, 0x00), "zeros.kplan");
  REQUIRE_FALSE(garbage.ok());
  CHECK_THAT(garbage.error().message, Contains("not a kplan file"));
}

TEST_CASE("a plan of another format version is rejected naming both versions", "[load][plan]") {
  PlanDesc d = tiny_plan();
  d.format_version = kPlanFormatVersion + 1;
  CHECK(error_of(d) == "tiny.kplan: plan format version " + std::to_string(kPlanFormatVersion + 1) +
                           ", this loader reads version " + std::to_string(kPlanFormatVersion) +
                           " (recompile the manifest with a matching kern-verify)");
}

TEST_CASE("a plan of another version is reported as such even when this version's verifier would reject it",
          "[load][plan]") {
  PlanDesc d = tiny_plan();
  d.format_version = 7;
  std::vector<uint8_t> bytes = serialize(d);
  bytes.resize(bytes.size() / 2);  // the root table sits at the front; vectors and strings at the back
  // (and the checksum trailer is gone: the version is still named first)
  auto r = load::PlanFile::from_bytes(bytes, "future.kplan");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Contains("future.kplan: plan format version 7, this loader reads version"));
}

TEST_CASE("a verifier failure on a structurally broken plan is reported as corrupt", "[load][plan]") {
  std::vector<uint8_t> bytes = serialize(tiny_plan());
  // Point the root offset past the end of the buffer.
  bytes[0] = 0xf0;
  bytes[1] = 0xff;
  auto r = load::PlanFile::from_bytes(reseal(bytes), "bad.kplan");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Contains("bad.kplan: corrupt plan: the FlatBuffers verifier rejected it"));
}

TEST_CASE("plan validation rejects each out-of-range index or malformed entry with a message naming it",
          "[load][plan]") {
  struct Case {
    const char* what;
    std::function<void(PlanDesc&)> mutate;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"launch step", [](PlanDesc& d) { d.programs[0].launches[1].step = 9; },
       "programs[0] 'main'.launches[1]: step index 9 out of range (3 steps)"},
      {"dispatch index", [](PlanDesc& d) { d.programs[0].launches[1].dispatch = 2; },
       "programs[0] 'main'.launches[1]: dispatch index 2 out of range (2 dispatches)"},
      {"arg count", [](PlanDesc& d) { d.programs[0].launches[0].args.pop_back(); },
       "programs[0] 'main'.launches[0]: 3 args for step 'test_add_bias' with 4 params"},
      {"buffer index", [](PlanDesc& d) { d.programs[0].launches[0].args[2].index = 400; },
       "programs[0] 'main'.launches[0].args[2]: buffer index 400 out of range (4 buffers)"},
      {"buffer offset", [](PlanDesc& d) { d.programs[0].launches[0].args[2].offset = 72; },
       "programs[0] 'main'.launches[0].args[2]: offset 72 B is past the end of buffer 'acc' (64 B)"},
      // Equal to the size: no byte left, as kern-verify's E0148 (offset >= size).
      {"buffer offset at its size", [](PlanDesc& d) { d.programs[0].launches[0].args[2].offset = 64; },
       "programs[0] 'main'.launches[0].args[2]: offset 64 B is past the end of buffer 'acc' (64 B)"},
      // Scratch arguments get the same alignment and bound checks (the cuda
      // device has no launch-time extent check to catch them later).
      {"misaligned scratch offset", [](PlanDesc& d) { d.programs[0].launches[1].args[1].offset = 4; },
       "programs[0] 'main'.launches[1].args[1]: offset 4 B is not a multiple of the element size 8 B of the "
       "param's dtype"},
      {"scratch offset past its end", [](PlanDesc& d) { d.programs[0].launches[1].args[1].offset = 72; },
       "programs[0] 'main'.launches[1].args[1]: offset 72 B is past the end of scratch 'tmp' (64 B)"},
      {"scratch offset at its size", [](PlanDesc& d) { d.programs[0].launches[1].args[1].offset = 64; },
       "programs[0] 'main'.launches[1].args[1]: offset 64 B is past the end of scratch 'tmp' (64 B)"},
      {"state align 2^63", [](PlanDesc& d) { d.states[0].align = uint64_t{1} << 63; },
       "states[0] 'kv': align 9223372036854775808 B exceeds the loader's limit of 4096 B"},
      {"state align 8192 (one past the page limit)", [](PlanDesc& d) { d.states[0].align = 8192; },
       "states[0] 'kv': align 8192 B exceeds the loader's limit of 4096 B"},
      {"misaligned buffer offset", [](PlanDesc& d) { d.programs[0].launches[0].args[2].offset = 63; },
       "programs[0] 'main'.launches[0].args[2]: offset 63 B is not a multiple of the element size 8 B of the "
       "param's dtype"},
      {"literal wider than its param", [](PlanDesc& d) { d.programs[0].launches[0].args[3] = arg_literal(1ull << 32); },
       "programs[0] 'main'.launches[0].args[3]: literal 0x0000000100000000 does not fit the param's 4-byte type"},
      {"state index", [](PlanDesc& d) { d.programs[0].launches[2].args[2].index = 1; },
       "programs[0] 'main'.launches[2].args[2]: state index 1 out of range (1 states)"},
      {"scratch index", [](PlanDesc& d) { d.programs[0].launches[1].args[1].index = 3; },
       "programs[0] 'main'.launches[1].args[1]: scratch index 3 out of range (1 scratch entries)"},
      {"scratch of another kernel", [](PlanDesc& d) { d.scratch[0].kernel = 0; },
       "programs[0] 'main'.launches[1].args[1]: scratch 'tmp' belongs to kernel 0, not the step's kernel 1"},
      {"literal for a pointer", [](PlanDesc& d) { d.programs[0].launches[0].args[0] = arg_literal(5); },
       "programs[0] 'main'.launches[0].args[0]: a scalar argument for a pointer param"},
      {"buffer for a scalar", [](PlanDesc& d) { d.programs[0].launches[0].args[3] = arg_buffer(0); },
       "programs[0] 'main'.launches[0].args[3]: a pointer argument for a scalar param"},
      {"expr head", [](PlanDesc& d) { d.programs[0].launches[0].args[3].expr = ExprDesc{{plan::ExprNode(plan::ExprOp::mul, 2)}}; },
       "programs[0] 'main'.launches[0].args[3].expr: node 0 is mul, expected const or sym"},
      {"expr symbol", [](PlanDesc& d) { d.programs[0].launches[0].args[3].expr = ExprDesc::s(7); },
       "programs[0] 'main'.launches[0].args[3].expr: symbol index 7 out of range (1 symbols)"},
      {"expr second head", [](PlanDesc& d) { d.steps[0].grid[0] = ExprDesc::s(0).then(plan::ExprOp::sym, 0); },
       "steps[0] 'test_add_bias'.grid_x: node 1 is sym, expected ceil_div or mul"},
      {"expr divide by zero", [](PlanDesc& d) { d.steps[1].grid[0] = ExprDesc::s(0).ceil_div(0); },
       "steps[1] 'test_double'.grid_x: node 1 divides by zero"},
      {"expr empty", [](PlanDesc& d) { d.steps[2].shared_mem = ExprDesc{}; },
       "steps[2] 'test_finish'.shared_mem: empty expression"},
      {"kernel step", [](PlanDesc& d) { d.kernels[1].steps[1] = 3; },
       "kernels[1] 'finish'.steps[1]: step index 3 out of range (3 steps)"},
      {"step kernel", [](PlanDesc& d) { d.steps[0].kernel = 2; },
       "steps[0] 'test_add_bias': kernel index 2 out of range (2 kernels)"},
      {"step cubin", [](PlanDesc& d) { d.steps[0].cubin = 0; },
       "steps[0] 'test_add_bias': cubin index 0 out of range (0 cubins)"},
      {"zero block", [](PlanDesc& d) { d.steps[0].block[1] = 0; }, "steps[0] 'test_add_bias': block has a zero dimension"},
      {"buffer size", [](PlanDesc& d) { d.buffers[2].max_size_bytes = 63; },
       "buffers[2] 'acc': max_size_bytes 63 B does not match its shape (64 B at the symbols' maxima)"},
      {"buffer dim chain", [](PlanDesc& d) { d.buffers[2].shape[0] = ExprDesc::s(0).mul(2); },
       "buffers[2] 'acc'.shape[0]: a dimension must be one constant or symbol"},
      {"scratch kernel", [](PlanDesc& d) { d.scratch[0].kernel = 5; },
       "scratch[0] 'tmp': kernel index 5 out of range (2 kernels)"},
      {"symbol bounds", [](PlanDesc& d) { d.symbols[0].min = 9; }, "symbols[0] 'tokens': min 9 > max 8"},
      {"state align", [](PlanDesc& d) { d.states[0].align = 48; }, "states[0] 'kv': align 48 is not a power of two"},
      {"unknown dtype", [](PlanDesc& d) { d.buffers[0].dtype = static_cast<plan::DType>(200); },
       "buffers[0] 'ids': unknown dtype 200"},
      {"unknown class", [](PlanDesc& d) { d.buffers[0].cls = static_cast<plan::BufferClass>(9); },
       "buffers[0] 'ids': unknown buffer class 9"},
      {"unknown arg kind", [](PlanDesc& d) { d.programs[0].launches[0].args[3].kind = static_cast<plan::ArgKind>(7); },
       "programs[0] 'main'.launches[0].args[3]: unknown arg kind 7"},
      {"unknown param kind", [](PlanDesc& d) { d.kernels[0].params[3] = scalar(static_cast<plan::ParamKind>(42)); },
       "kernels[0] 'add_bias'.params[3]: unknown param kind 42"},
      {"labels", [](PlanDesc& d) { d.programs[0].labels->pop_back(); },
       "programs[0] 'main': 1 dispatch labels for 2 dispatches"},
      {"cubin sha256", [](PlanDesc& d) { d.cubins.push_back({"a.cubin", std::vector<uint8_t>(31, 1)}); },
       "cubins[0]: sha256 has 31 bytes, expected 32"},
      {"cubin path", [](PlanDesc& d) { d.cubins.push_back({"../a.cubin", std::nullopt}); },
       "cubins[0]: path '../a.cubin' must be relative to the kernels directory without '..'"},
      {"manifest sha256", [](PlanDesc& d) { d.manifest_sha256.pop_back(); },
       "manifest_sha256 has 31 bytes, expected 32"},
  };
  for (const Case& c : cases) {
    PlanDesc d = tiny_plan();
    c.mutate(d);
    INFO(c.what);
    CHECK(error_of(d) == std::string("tiny.kplan: ") + c.expect);
  }
}

TEST_CASE("the workspace arena of an untrusted plan is proven before use", "[load][plan][arena]") {
  // tiny_plan: workspace 'acc' (64 B) is live at launches 0-1, scratch 'tmp'
  // (64 B) at launches 1-2 (dispatch 1): they may not share bytes.
  auto with_arena = [](uint64_t acc, uint64_t tmp, uint64_t size, uint64_t align = 256) {
    PlanDesc d = tiny_plan();
    d.buffers[2].arena_offset = acc;
    d.scratch[0].arena_offset = tmp;
    d.arena = ArenaDesc{size, align, 512, 512, true};
    return d;
  };
  CHECK(load_desc(with_arena(0, 256, 512)).ok());
  CHECK(load_desc(with_arena(256, 0, 512)).ok());
  const std::vector<std::pair<PlanDesc, std::string>> cases = {
      {with_arena(0, 0, 256),
       "arena: workspace arena: scratch 'tmp' [0, 64) and buffer 'acc' [0, 64) are both live at program 'main' "
       "launch 1"},
      {with_arena(0, 256, 300), "arena: workspace arena: scratch 'tmp' (64 B at offset 256) does not fit the arena of 300 B"},
      {with_arena(0, 128, 512), "arena: workspace arena: scratch 'tmp' at offset 128 is not aligned to 256 B"},
      {with_arena(0, 256, 512, 384), "arena: arena.align 384 is not a power of two >= 256"},
      {with_arena(0, 256, 512, 128), "arena: arena.align 128 is not a power of two >= 256"},
      {with_arena(UINT64_MAX - 255, 256, 1024),
       "arena: workspace arena: buffer 'acc' (64 B at offset 18446744073709551360) does not fit the arena of 1024 B"},
  };
  for (const auto& [d, expect] : cases) {
    INFO(expect);
    CHECK(error_of(d) == "tiny.kplan: " + expect);
  }
}

TEST_CASE("a plan without a workspace arena is refused", "[load][plan][arena]") {
  PlanDesc d = tiny_plan();
  d.write_arena = false;
  CHECK(error_of(d) == "tiny.kplan: arena: the plan has no workspace arena");
}
