// SPEC §4 rules 6-9 (impl vs interface, dispatches, program data flow,
// unused declarations), domains and error collection, in the style of
// verifier_test.cpp: base manifest + one mutation, exact codes and pointers.
#include <catch2/catch.hpp>

#include "fixture.h"
#include "kern-verify/verify_context.h"

using namespace kern::verify::testing;
using V = std::vector<std::string>;

// Rule 6: impl vs interface
TEST_CASE("verify rejects a step writing through an interface in param", "[verify][rule6]") {
  // prefill then writes nothing visible: the warning is a true consequence.
  CHECK(verify_findings(set(B(), "/kernels/kv_write/params/1", "\"in ptr\"")) ==
        V{"E0133 " + kKvStep + "/args/1", "W0002 /programs/prefill"});
}

TEST_CASE("verify lets a step read an interface inout or out param it does not write", "[verify][rule6]") {
  // An `in` step param may forward an `inout` interface param.
  CHECK(verify_findings(set(B(), kKvStep + "/params/1", "\"in ptr\"")).empty());
}

TEST_CASE("verify rejects an interface out param that no step writes", "[verify][rule6]") {
  CHECK(verify_findings(set(B(), kArgmax1 + "/params/2", "\"in buffer<i64>\"")) ==
        V{"E0134 /kernels/argmax/params/1", "E0135 " + kArgmax1 + "/args/2"});
}

TEST_CASE("verify rejects reading an interface out param before a step wrote it", "[verify][rule6]") {
  const std::string peek = R"({"symbol": "kern_peek", "cubin": "embed.cubin", "sha256": ")" + std::string(64, 'a') +
                           R"(", "params": ["in buffer<bf16>"], "block": [32, 1, 1], "grid": [1, 1, 1], "args": [{"arg": 2}]})";
  CHECK(verify_findings(insert(B(), "/kernels/embed/impl/steps", 0, peek)) ==
        V{"E0135 /kernels/embed/impl/steps/0/args/0"});
  CHECK(verify_findings(insert(B(), "/kernels/embed/impl/steps", 1, peek)).empty());
}

TEST_CASE("verify rejects reading scratch before any step wrote it", "[verify][rule6]") {
  CHECK(verify_findings(set(B(), kArgmax0 + "/params/1", "\"in buffer<f32>\"")) ==
        V{"E0136 " + kArgmax0 + "/args/1"});
}

TEST_CASE("verify rejects a misaligned scratch offset", "[verify][rule6]") {
  CHECK(verify_findings(set(B(), kArgmax1 + "/args/0", R"({"scratch": "partial_val", "offset": 2})")) ==
        V{"E0137 " + kArgmax1 + "/args/0/offset"});
}

TEST_CASE("verify rejects a scratch offset past the scratch at the symbols' minima", "[verify][rule6]") {
  // partial_val is f32 [tokens, 8]: 32 B at tokens = 1.
  CHECK(verify_findings(set(B(), kArgmax1 + "/args/0", R"({"scratch": "partial_val", "offset": 32})")) ==
        V{"E0138 " + kArgmax1 + "/args/0/offset"});
  CHECK(verify_findings(set(B(), kArgmax1 + "/args/0", R"({"scratch": "partial_val", "offset": 28})")).empty());
}

TEST_CASE("verify rejects an unused scratch", "[verify][rule6]") {
  CHECK(verify_findings(set(B(), "/kernels/argmax/impl/scratch/tmp", R"({"dtype": "f32", "shape": [4]})")) ==
        V{"E0139 /kernels/argmax/impl/scratch/tmp"});
}

// Rule 7: dispatches
TEST_CASE("verify rejects a dispatch with the wrong number of args", "[verify][rule7]") {
  CHECK(verify_findings(erase(B(), kDecode + "2/args/5")) == V{"E0140 " + kDecode + "2/args"});
}

TEST_CASE("verify rejects a buffer passed to a scalar param", "[verify][rule7]") {
  CHECK(verify_findings(set(B(), kDecode + "2/args/3", R"({"buf": "hidden"})")) == V{"E0141 " + kDecode + "2/args/3"});
}

TEST_CASE("verify rejects a scalar passed to a pointer param", "[verify][rule7]") {
  CHECK(verify_findings(set(B(), kDecode + "2/args/1", R"({"i32": 0})")) ==
        V{"E0141 " + kDecode + "2/args/1", "E0156 /buffers/w"});
}

TEST_CASE("verify rejects a buffer whose dtype differs from the param", "[verify][rule7]") {
  CHECK(verify_findings(set(B(), kDecode + "3/args/0", R"({"buf": "ids"})")) == V{"E0142 " + kDecode + "3/args/0"});
}

TEST_CASE("verify rejects a state passed to a typed buffer param", "[verify][rule7]") {
  CHECK(verify_findings(set(B(), "/programs/prefill/dispatches/0/args/1", R"({"state": "kv"})")) ==
        V{"E0143 /programs/prefill/dispatches/0/args/1"});
}

TEST_CASE("verify rejects an expression whose range does not fit the param", "[verify][rule7]") {
  CHECK(verify_findings(set(B(), kDecode + "1/args/2", R"({"expr": {"mul": [{"sym": "tokens"}, 100000000]}})")) ==
        V{"E0144 " + kDecode + "1/args/2"});
  // 64 * 33554431 = 2147483584 still fits i32.
  CHECK(verify_findings(set(B(), kDecode + "1/args/2", R"({"expr": {"mul": [{"sym": "tokens"}, 33554431]}})")).empty());
}

TEST_CASE("verify rejects a symbol or expression passed to an f32 param", "[verify][rule7]") {
  CHECK(verify_findings(set(B(), kDecode + "1/args/3", R"({"sym": "tokens"})")) == V{"E0145 " + kDecode + "1/args/3"});
}

TEST_CASE("verify rejects a literal of another kind than the param", "[verify][rule7]") {
  CHECK(verify_findings(set(B(), kDecode + "1/args/3", R"({"i32": 1})")) == V{"E0146 " + kDecode + "1/args/3"});
  CHECK(verify_findings(set(B(), kDecode + "2/args/4", R"({"i64": 32})")) == V{"E0146 " + kDecode + "2/args/4"});
}

TEST_CASE("verify rejects an offset not aligned to the param dtype", "[verify][rule7]") {
  CHECK(verify_findings(set(B(), kDecode + "2/args/0/offset", "3")) == V{"E0147 " + kDecode + "2/args/0/offset"});
}

TEST_CASE("verify rejects an offset past the buffer at the symbols' minima", "[verify][rule7]") {
  // hidden is bf16 [tokens, 16]: 32 B at tokens = 1.
  CHECK(verify_findings(set(B(), kDecode + "2/args/0/offset", "32")) == V{"E0148 " + kDecode + "2/args/0/offset"});
  CHECK(verify_findings(set(B(), kDecode + "2/args/0/offset", "30")).empty());
}

TEST_CASE("verify bounds offsets into a fixed-size state", "[verify][rule7]") {
  const std::string fixed = set(erase(B(), "/states/kv/bytes_per_token"), "/states/kv/bytes_fixed", "512");
  CHECK(verify_findings(fixed) == V{"E0148 " + kDecode + "1/args/1/offset"});  // decode passes offset 512
  CHECK(verify_findings(set(fixed, kDecode + "1/args/1/offset", "256")).empty());
}

// Rule 8: program data flow
TEST_CASE("verify rejects reading a workspace buffer before any dispatch wrote it", "[verify][rule8]") {
  CHECK(verify_findings(set(B(), kDecode + "0/args/2", R"({"buf": "logits"})")) ==
        V{"E0149 " + kDecode + "1/args/0"});
}

TEST_CASE("verify checks meta.spec as kern-run's speculative caller needs it (E0165)", "[verify][rule1]") {
  // The base manifest's `tokens` symbol has max 64.
  for (const char* bad : {R"({"block": 0, "mask_token": 5})", R"({"block": 1, "mask_token": 5})",
                          R"({"block": 600, "mask_token": 5})"}) {
    INFO(bad);
    CHECK(verify_findings(set(B(), "/meta/spec", bad)) == V{"E0165 /meta/spec/block"});
  }
  CHECK(verify_findings(set(B(), "/meta/spec", R"({"block": 8, "mask_token": -1})")) ==
        V{"E0165 /meta/spec/mask_token"});
  CHECK(verify_findings(set(B(), "/meta/spec", R"({"block": 2, "mask_token": 0})")).empty());
  CHECK(verify_findings(set(B(), "/meta/spec", R"({"block": 64, "mask_token": 31})")).empty());
}

TEST_CASE("verify counts a dispatch's own writes only after all its reads", "[verify][rule8]") {
  // `stage` writes its first argument and reads its second: passing the same
  // unwritten workspace buffer as both reads it before anything wrote it.
  std::string m = set(B(), "/kernels/stage", R"({
      "params": ["out buffer<bf16>", "in buffer<bf16>", "i32"],
      "impl": {"steps": [{"symbol": "kern_stage", "cubin": "stage.cubin",
        "sha256": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
        "params": ["out buffer<bf16>", "in buffer<bf16>", "i32"], "block": [64, 1, 1], "grid": [1, 1, 1],
        "args": [{"arg": 0}, {"arg": 1}, {"arg": 2}]}]}})");
  m = set(m, "/buffers/staged", R"({"dtype": "bf16", "shape": ["tokens", 16], "class": "workspace"})");
  m = set(m, kDecode + "4", R"({"kernel": "stage", "args": [{"buf": "staged"}, {"buf": "staged"}, {"sym": "tokens"}]})");
  CHECK(verify_findings(m) == V{"E0149 " + kDecode + "4/args/1"});
  // Reading a buffer an earlier dispatch wrote is fine.
  CHECK(verify_findings(set(m, kDecode + "4/args/1", R"({"buf": "hidden"})")).empty());
}

TEST_CASE("verify rejects a dispatch writing an input buffer", "[verify][rule8]") {
  CHECK(verify_findings(set(B(), kDecode + "3/args/1", R"({"buf": "ids"})")) ==
        V{"E0150 " + kDecode + "3/args/1", "E0156 /buffers/next"});
}

TEST_CASE("verify rejects a dispatch writing a weight buffer", "[verify][rule8]") {
  CHECK(verify_findings(set(B(), kDecode + "2/args/2", R"({"buf": "w"})")) ==
        V{"E0149 " + kDecode + "3/args/0", "E0151 " + kDecode + "2/args/2"});
}

TEST_CASE("verify rejects an output buffer that no program writes", "[verify][rule8]") {
  CHECK(verify_findings(set(B(), "/buffers/table/class", "\"output\"")) ==
        V{"E0149 /programs/decode/dispatches/0/args/1", "E0149 /programs/prefill/dispatches/0/args/1",
          "E0152 /buffers/table"});
}

TEST_CASE("verify rejects a carry buffer that no program writes", "[verify][rule8]") {
  CHECK(verify_findings(set(B(), "/buffers/table/class", "\"carry\"")) == V{"E0153 /buffers/table"});
}

TEST_CASE("verify counts a carry as initialised in every program", "[verify][rule8]") {
  CHECK(verify_findings(set(B(), "/buffers/hidden/class", "\"carry\"")).empty());
}

TEST_CASE("verify warns about a program that writes no output, carry or state", "[verify][rule8]") {
  Run r = run(erase(B(), "/programs/prefill/dispatches/1"));
  CHECK(findings(r) == V{"W0002 /programs/prefill"});
  CHECK(r.verified.has_value());
}

// Rule 9: unused declarations
TEST_CASE("verify rejects an unused symbol", "[verify][rule9]") {
  CHECK(verify_findings(set(B(), "/symbols/batch", R"({"min": 1, "max": 4})")) == V{"E0154 /symbols/batch"});
}

TEST_CASE("verify rejects an unused state", "[verify][rule9]") {
  CHECK(verify_findings(set(B(), "/states/kv2", R"({"bytes_fixed": 64})")) == V{"E0155 /states/kv2"});
}

TEST_CASE("verify rejects an unused buffer", "[verify][rule9]") {
  CHECK(verify_findings(set(B(), "/buffers/spare", R"({"dtype": "f32", "shape": [4], "class": "workspace"})")) ==
        V{"E0156 /buffers/spare"});
}

TEST_CASE("verify rejects an unused kernel", "[verify][rule9]") {
  const std::string gemm = R"({"params": ["in buffer<bf16>", "in buffer<bf16>", "inout buffer<bf16>", "i32", "i32", "i32"],
    "impl": {"steps": [{"symbol": "extern:cublaslt_bf16_tn_acc",
      "params": ["in buffer<bf16>", "in buffer<bf16>", "inout buffer<bf16>", "i32", "i32", "i32"],
      "block": [1, 1, 1], "grid": [1, 1, 1],
      "args": [{"arg": 0}, {"arg": 1}, {"arg": 2}, {"arg": 3}, {"arg": 4}, {"arg": 5}]}]}})";
  CHECK(verify_findings(set(B(), "/kernels/gemm_acc", gemm)) == V{"E0157 /kernels/gemm_acc"});
  // Declaring C `out` while the accumulating step reads it is a second mistake.
  CHECK(verify_findings(set(set(B(), "/kernels/gemm_acc", gemm), "/kernels/gemm_acc/params/2", "\"out buffer<bf16>\"")) ==
        V{"E0135 /kernels/gemm_acc/impl/steps/0/args/2", "E0157 /kernels/gemm_acc"});
}

// Domains
TEST_CASE("verify resolves a domain's index_into to a buffer or state", "[verify][domain]") {
  CHECK(verify_findings(set(B(), "/buffers/ids/domain", R"({"index_into": "table"})")).empty());
  CHECK(verify_findings(set(B(), "/buffers/ids/domain", R"({"index_into": "kv", "unit": 16})")).empty());
  Run r = run(set(B(), "/buffers/ids/domain", R"({"index_into": "tabel"})"));
  REQUIRE(findings(r) == V{"E0158 /buffers/ids/domain"});
  CHECK(r.diags[0].help.find("`table`") != std::string::npos);
}

TEST_CASE("verify resolves the symbols of a domain's bound expressions", "[verify][domain]") {
  CHECK(verify_findings(set(B(), "/buffers/ids/domain", R"({"min": 0, "max": {"sym": "tokens"}})")).empty());
  CHECK(verify_findings(set(B(), "/buffers/ids/domain", R"({"min": 0, "max": {"sym": "tokenz"}})")) ==
        V{"E0105 /buffers/ids/domain/max"});
}

// Collecting
TEST_CASE("verify reports every error at once", "[verify]") {
  std::string m = set(B(), "/meta/version", "3");
  m = set(m, "/states/kv/align", "3");
  m = set(m, kEmbedStep + "/block", "[2048, 1, 1]");
  m = set(m, kDecode + "2/args/0/buf", "\"nope\"");
  CHECK(verify_findings(m) == V{"E0100 /meta/version", "E0104 /states/kv/align", "E0112 " + kDecode + "2/args/0/buf",
                                "E0118 " + kEmbedStep + "/block"});
}

TEST_CASE("verify returns no VerifiedManifest when there are errors", "[verify]") {
  Run r = run(set(B(), "/meta/version", "1"));
  REQUIRE(r.read_ok);
  CHECK_FALSE(r.verified.has_value());
}

TEST_CASE("verify messages name the subject, the value and the limit", "[verify]") {
  Run r = run(set(B(), kArgmax0 + "/shared_mem", "240000"));
  REQUIRE(r.diags.size() == 1);
  CHECK(r.diags[0].message == "kernels.argmax.impl.steps[0]: shared_mem 240000 B exceeds the opt-in limit 232448 B");
  CHECK(r.diags[0].severity == kern::Severity::kError);
}

TEST_CASE("closest_name suggests only plausible typos", "[verify][help]") {
  using kern::verify::closest_name;
  const std::vector<std::string_view> names = {"hidden", "table", "logits"};
  CHECK(closest_name("tabel", names) == std::optional<std::string>("table"));  // transposition
  CHECK(closest_name("hiden", names) == std::optional<std::string>("hidden"));
  CHECK(closest_name("logit", names) == std::optional<std::string>("logits"));
  CHECK_FALSE(closest_name("weights", names).has_value());
  CHECK_FALSE(closest_name("x", names).has_value());
}
