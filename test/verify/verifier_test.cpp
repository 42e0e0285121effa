// The verifier against one valid base manifest (base_manifest.json) and one
// mutation per check: each asserts the exact codes and JSON pointers
// reported, so a missing check, a wrong span or a cascade fails the test.
#include <catch2/catch.hpp>

#include "fixture.h"
#include "kern-verify/verify_context.h"

using namespace kern::verify::testing;
using V = std::vector<std::string>;

namespace {
const std::string& B() { return base_manifest(); }
const std::string kEmbedStep = "/kernels/embed/impl/steps/0";
const std::string kKvStep = "/kernels/kv_write/impl/steps/0";
const std::string kGemmStep = "/kernels/gemm/impl/steps/0";
const std::string kArgmax0 = "/kernels/argmax/impl/steps/0";
const std::string kArgmax1 = "/kernels/argmax/impl/steps/1";
const std::string kDecode = "/programs/decode/dispatches/";
const std::string kHex64 = std::string(64, 'd');
}  // namespace

TEST_CASE("verify accepts the base manifest without any diagnostic", "[verify]") {
  Run r = run(B());
  REQUIRE(r.read_ok);
  CHECK(findings(r).empty());
  CHECK(r.verified.has_value());
}

// Rule 1-2
TEST_CASE("verify rejects a format version other than 2", "[verify][rule1]") {
  CHECK(verify_findings(set(B(), "/meta/version", "1")) == V{"E0100 /meta/version"});
}

TEST_CASE("verify rejects a symbol whose min exceeds its max without cascading", "[verify][rule2]") {
  CHECK(verify_findings(set(B(), "/symbols/tokens/min", "100")) == V{"E0101 /symbols/tokens"});
}

// Rule 3
TEST_CASE("verify rejects a state with no size", "[verify][rule3]") {
  CHECK(verify_findings(set(B(), "/states/kv/bytes_per_token", "0")) == V{"E0102 /states/kv"});
}

TEST_CASE("verify rejects a state with both bytes_per_token and bytes_fixed", "[verify][rule3]") {
  CHECK(verify_findings(set(B(), "/states/kv/bytes_fixed", "64")) == V{"E0103 /states/kv"});
}

TEST_CASE("verify rejects a state alignment that is not a power of two", "[verify][rule3]") {
  CHECK(verify_findings(set(B(), "/states/kv/align", "100")) == V{"E0104 /states/kv"});
  CHECK(verify_findings(set(B(), "/states/kv/align", "0")) == V{"E0104 /states/kv"});
}

// Rule 4
TEST_CASE("verify rejects an unknown symbol in a shape and suggests the closest name", "[verify][rule4]") {
  Run r = run(set(B(), "/buffers/hidden/shape/0", "\"token\""));
  REQUIRE(findings(r) == V{"E0105 /buffers/hidden/shape/0"});
  CHECK(r.diags[0].help.find("`tokens`") != std::string::npos);
}

TEST_CASE("verify rejects an empty shape", "[verify][rule4]") {
  CHECK(verify_findings(set(B(), "/buffers/hidden/shape", "[]")) == V{"E0106 /buffers/hidden"});
}

TEST_CASE("verify rejects a zero-sized dimension", "[verify][rule4]") {
  CHECK(verify_findings(set(B(), "/buffers/hidden/shape/1", "0")) == V{"E0107 /buffers/hidden/shape/1"});
}

TEST_CASE("verify rejects a buffer whose byte size overflows at the symbols' maxima", "[verify][rule4]") {
  CHECK(verify_findings(set(B(), "/buffers/hidden/shape/1", "1152921504606846976")) ==
        V{"E0108 /buffers/hidden"});
}

TEST_CASE("verify rejects a scratch whose byte size overflows at the symbols' maxima", "[verify][rule4]") {
  CHECK(verify_findings(set(B(), "/kernels/argmax/impl/scratch/partial_val/shape/1", "1152921504606846976")) ==
        V{"E0108 /kernels/argmax/impl/scratch/partial_val"});
}

// Expressions
TEST_CASE("verify rejects an expression that overflows at the symbols' maxima", "[verify][expr]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/grid/0", R"({"mul": [{"sym": "tokens"}, 18446744073709551615]})")) ==
        V{"E0109 " + kEmbedStep + "/grid/0"});
}

TEST_CASE("verify rejects ceil_div by zero", "[verify][expr]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/grid/0", R"({"ceil_div": [{"sym": "tokens"}, 0]})")) ==
        V{"E0110 " + kEmbedStep + "/grid/0"});
}

// References
TEST_CASE("verify rejects a dispatch of an unknown kernel without cascading", "[verify][refs]") {
  Run r = run(set(B(), kDecode + "2/kernel", "\"gem\""));
  REQUIRE(findings(r) == V{"E0111 " + kDecode + "2/kernel"});
  CHECK(r.diags[0].help.find("`gemm`") != std::string::npos);
}

TEST_CASE("verify rejects an unknown buffer and suggests the closest name", "[verify][refs]") {
  Run r = run(set(B(), kDecode + "2/args/0/buf", "\"hiden\""));
  REQUIRE(findings(r) == V{"E0112 " + kDecode + "2/args/0/buf"});
  CHECK(r.diags[0].help.find("`hidden`") != std::string::npos);
}

TEST_CASE("verify points a state passed as a buffer at the state", "[verify][refs]") {
  Run r = run(set(B(), kDecode + "2/args/1", R"({"buf": "kv"})"));
  REQUIRE(findings(r) == V{"E0112 " + kDecode + "2/args/1/buf", "E0156 /buffers/w"});
  CHECK(r.diags[0].help.find("{\"state\": \"kv\"}") != std::string::npos);
}

TEST_CASE("verify rejects an unknown state", "[verify][refs]") {
  CHECK(verify_findings(set(B(), kDecode + "1/args/1/state", "\"kvv\"")) == V{"E0113 " + kDecode + "1/args/1/state"});
}

TEST_CASE("verify rejects an unknown scratch", "[verify][refs]") {
  CHECK(verify_findings(set(B(), kArgmax1 + "/args/0/scratch", "\"partial\"")) ==
        V{"E0114 " + kArgmax1 + "/args/0"});
}

TEST_CASE("verify rejects an interface arg index out of range", "[verify][refs]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/args/4/arg", "9")) == V{"E0115 " + kEmbedStep + "/args/4"});
}

// Rule 5: steps
TEST_CASE("verify rejects an impl without steps", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), "/kernels/embed/impl/steps", "[]")) == V{"E0116 /kernels/embed"});
}

TEST_CASE("verify rejects a zero block dimension", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/block", "[128, 0, 1]")) == V{"E0117 " + kEmbedStep + "/block"});
}

TEST_CASE("verify rejects a block over 1024 threads", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/block", "[1024, 2, 1]")) == V{"E0118 " + kEmbedStep + "/block"});
}

TEST_CASE("verify rejects a block z over 64", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/block", "[1, 1, 128]")) == V{"E0119 " + kEmbedStep + "/block"});
}

TEST_CASE("verify rejects a grid that is zero at the symbols' minima", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/grid/1", "0")) == V{"E0120 " + kEmbedStep + "/grid/1"});
  CHECK(verify_findings(set(B(), kEmbedStep + "/grid/0", R"({"mul": [{"sym": "tokens"}, 0]})")) ==
        V{"E0120 " + kEmbedStep + "/grid/0"});
}

TEST_CASE("verify rejects a grid over the CUDA limits at the symbols' maxima", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kArgmax0 + "/grid/1", R"({"mul": [{"sym": "tokens"}, 2048]})")) ==
        V{"E0121 " + kArgmax0 + "/grid/1"});
  CHECK(verify_findings(set(B(), kArgmax0 + "/grid/0", "2147483648")) == V{"E0121 " + kArgmax0 + "/grid/0"});
  CHECK(verify_findings(set(B(), kArgmax0 + "/grid/0", "2147483647")).empty());
}

TEST_CASE("verify rejects shared memory over the 227 KB opt-in limit", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kArgmax0 + "/shared_mem", "232449")) == V{"E0122 " + kArgmax0 + "/shared_mem"});
  CHECK(verify_findings(set(B(), kArgmax0 + "/shared_mem", "232448")).empty());
}

TEST_CASE("verify rejects a malformed sha256", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/sha256", "\"abc123\"")) == V{"E0123 " + kEmbedStep + "/sha256"});
  CHECK(verify_findings(set(B(), kEmbedStep + "/sha256", "\"" + std::string(64, 'g') + "\"")) ==
        V{"E0123 " + kEmbedStep + "/sha256"});
}

TEST_CASE("verify rejects a sha256 without a cubin", "[verify][rule5]") {
  CHECK(verify_findings(erase(B(), kEmbedStep + "/cubin")) ==
        V{"E0124 " + kEmbedStep + "/sha256", "W0001 " + kEmbedStep + "/symbol"});
}

TEST_CASE("verify rejects one cubin pinned with two different sha256", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kArgmax1 + "/sha256", "\"" + kHex64 + "\"")) == V{"E0125 " + kArgmax1 + "/sha256"});
  // The same digest in another case is the same pin.
  CHECK(verify_findings(set(B(), kArgmax1 + "/sha256", "\"" + std::string(64, 'C') + "\"")).empty());
}

TEST_CASE("verify rejects a step whose arg count differs from its params", "[verify][rule5]") {
  CHECK(verify_findings(erase(B(), kEmbedStep + "/args/4")) == V{"E0126 " + kEmbedStep + "/args"});
}

TEST_CASE("verify rejects a forwarded interface arg of another dtype", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/params/1", "\"in buffer<f32>\"")) ==
        V{"E0127 " + kEmbedStep + "/args/1"});
}

TEST_CASE("verify rejects a forwarded scalar of another kind", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/params/3", "\"u32\"")) == V{"E0127 " + kEmbedStep + "/args/3"});
}

TEST_CASE("verify lets a typed buffer go into an untyped ptr step param", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kEmbedStep + "/params/1", "\"in ptr\"")).empty());
}

TEST_CASE("verify rejects an untyped ptr forwarded into a typed buffer step param", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kKvStep + "/params/1", "\"inout buffer<bf16>\"")) ==
        V{"E0127 " + kKvStep + "/args/1"});
}

TEST_CASE("verify rejects a scratch passed to a param of another dtype", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kArgmax0 + "/params/1", "\"out buffer<bf16>\"")) ==
        V{"E0128 " + kArgmax0 + "/args/1"});
}

TEST_CASE("verify rejects a step literal of another kind than its param", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kKvStep + "/args/5", R"({"i32": 1})")) == V{"E0129 " + kKvStep + "/args/5"});
  CHECK(verify_findings(set(B(), kKvStep + "/args/1", R"({"i64": 1})")) ==
        V{"E0129 " + kKvStep + "/args/1"});
}

TEST_CASE("verify rejects an unknown extern op", "[verify][rule5]") {
  Run r = run(set(B(), kGemmStep + "/symbol", "\"extern:cublaslt_bf16\""));
  REQUIRE(findings(r) == V{"E0130 " + kGemmStep + "/symbol"});
  CHECK(r.diags[0].help.find("extern:cublaslt_bf16_tn") != std::string::npos);
}

TEST_CASE("verify rejects extern step params that differ from the op's ABI", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kGemmStep + "/symbol", "\"extern:cublaslt_bf16_tn_acc\"")) ==
        V{"E0131 " + kGemmStep + "/params"});
}

TEST_CASE("verify rejects an extern step that pins a cubin", "[verify][rule5]") {
  CHECK(verify_findings(set(B(), kGemmStep + "/cubin", "\"gemm.cubin\"")) == V{"E0132 " + kGemmStep + "/cubin"});
}

TEST_CASE("verify warns about a non-extern step without a cubin pin", "[verify][rule5]") {
  Run r = run(erase(erase(B(), kEmbedStep + "/cubin"), kEmbedStep + "/sha256"));
  CHECK(findings(r) == V{"W0001 " + kEmbedStep + "/symbol"});
  CHECK(r.verified.has_value());  // warnings do not block the plan
}

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
        V{"E0137 " + kArgmax1 + "/args/0"});
}

TEST_CASE("verify rejects a scratch offset past the scratch at the symbols' minima", "[verify][rule6]") {
  // partial_val is f32 [tokens, 8]: 32 B at tokens = 1.
  CHECK(verify_findings(set(B(), kArgmax1 + "/args/0", R"({"scratch": "partial_val", "offset": 32})")) ==
        V{"E0138 " + kArgmax1 + "/args/0"});
  CHECK(verify_findings(set(B(), kArgmax1 + "/args/0", R"({"scratch": "partial_val", "offset": 28})")).empty());
}

TEST_CASE("verify rejects an unused scratch", "[verify][rule6]") {
  CHECK(verify_findings(set(B(), "/kernels/argmax/impl/scratch/tmp", R"({"dtype": "f32", "shape": [4]})")) ==
        V{"E0139 /kernels/argmax/impl/scratch/tmp"});
}

// Rule 7: dispatches
TEST_CASE("verify rejects a dispatch with the wrong number of args", "[verify][rule7]") {
  CHECK(verify_findings(erase(B(), kDecode + "2/args/5")) == V{"E0140 " + kDecode + "2"});
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
  CHECK(verify_findings(set(B(), kDecode + "2/args/0/offset", "3")) == V{"E0147 " + kDecode + "2/args/0"});
}

TEST_CASE("verify rejects an offset past the buffer at the symbols' minima", "[verify][rule7]") {
  // hidden is bf16 [tokens, 16]: 32 B at tokens = 1.
  CHECK(verify_findings(set(B(), kDecode + "2/args/0/offset", "32")) == V{"E0148 " + kDecode + "2/args/0"});
  CHECK(verify_findings(set(B(), kDecode + "2/args/0/offset", "30")).empty());
}

TEST_CASE("verify bounds offsets into a fixed-size state", "[verify][rule7]") {
  const std::string fixed = set(erase(B(), "/states/kv/bytes_per_token"), "/states/kv/bytes_fixed", "512");
  CHECK(verify_findings(fixed) == V{"E0148 " + kDecode + "1/args/1"});  // decode passes offset 512
  CHECK(verify_findings(set(fixed, kDecode + "1/args/1/offset", "256")).empty());
}

// Rule 8: program data flow
TEST_CASE("verify rejects reading a workspace buffer before any dispatch wrote it", "[verify][rule8]") {
  CHECK(verify_findings(set(B(), kDecode + "0/args/2", R"({"buf": "logits"})")) ==
        V{"E0149 " + kDecode + "1/args/0"});
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
  CHECK(verify_findings(m) == V{"E0100 /meta/version", "E0104 /states/kv", "E0112 " + kDecode + "2/args/0/buf",
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
