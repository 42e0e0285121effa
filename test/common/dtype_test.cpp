// dtypes and kernel parameter types: spellings, sizes, strict parsing.
#include <catch2/catch.hpp>

#include "common/dtype.h"

namespace kern {
namespace {

TEST_CASE("dtype names, safetensors names and sizes round-trip", "[dtype]") {
  struct Row {
    DType d;
    const char* name;
    const char* st;
    uint32_t size;
  };
  for (Row r : {Row{DType::kBf16, "bf16", "BF16", 2}, Row{DType::kF16, "f16", "F16", 2},
                Row{DType::kF32, "f32", "F32", 4}, Row{DType::kFp8e4m3, "fp8e4m3", "F8_E4M3", 1},
                Row{DType::kI32, "i32", "I32", 4}, Row{DType::kU32, "u32", "U32", 4},
                Row{DType::kI64, "i64", "I64", 8}, Row{DType::kU8, "u8", "U8", 1}}) {
    INFO(r.name);
    CHECK(dtype_name(r.d) == r.name);
    CHECK(parse_dtype(r.name) == r.d);
    CHECK(dtype_safetensors_name(r.d) == r.st);
    CHECK(parse_safetensors_dtype(r.st) == r.d);
    CHECK(dtype_size_bytes(r.d) == r.size);
  }
}

TEST_CASE("dtype parsing rejects other spellings", "[dtype]") {
  for (const char* s : {"", "BF16", "bfloat16", "f64", "fp8", "i8", " bf16", "bf16 "}) {
    INFO(s);
    CHECK_FALSE(parse_dtype(s).has_value());
  }
  CHECK_FALSE(parse_safetensors_dtype("bf16").has_value());
  CHECK_FALSE(parse_safetensors_dtype("F64").has_value());
}

TEST_CASE("every well-formed parameter type round-trips", "[dtype][param]") {
  std::vector<std::string> all = {"i32", "u32", "i64", "f32", "u8"};
  for (const char* access : {"in", "out", "inout"}) {
    all.push_back(std::string(access) + " ptr");
    for (const char* d : {"bf16", "f16", "f32", "fp8e4m3", "i32", "u32", "i64", "u8"}) {
      all.push_back(std::string(access) + " buffer<" + d + ">");
    }
  }
  REQUIRE(all.size() == 5 + 3 * 9);
  for (const std::string& s : all) {
    INFO(s);
    auto p = parse_param_type(s);
    REQUIRE(p.has_value());
    CHECK(param_type_name(*p) == s);
  }
}

TEST_CASE("parameter types carry kind, access and dtype", "[dtype][param]") {
  auto p = parse_param_type("inout buffer<fp8e4m3>");
  REQUIRE(p.has_value());
  CHECK(p->kind == ParamKind::kBuffer);
  CHECK(p->access == Access::kInOut);
  CHECK(p->dtype == DType::kFp8e4m3);
  CHECK(p->reads());
  CHECK(p->writes());
  auto out = parse_param_type("out ptr");
  REQUIRE(out.has_value());
  CHECK(out->kind == ParamKind::kPtr);
  CHECK_FALSE(out->reads());
  CHECK(out->writes());
  auto in = parse_param_type("in buffer<bf16>");
  CHECK(in->reads());
  CHECK_FALSE(in->writes());
  CHECK(parse_param_type("u8")->is_scalar());
  CHECK(*parse_param_type("in buffer<bf16>") != *parse_param_type("in buffer<f16>"));
  CHECK(*parse_param_type("in buffer<bf16>") != *parse_param_type("out buffer<bf16>"));
  CHECK(*parse_param_type("in ptr") == *parse_param_type("in ptr"));
}

TEST_CASE("malformed parameter types are rejected", "[dtype][param]") {
  for (const char* s : {"", "I32", "i16", "f64", "ptr", "in", "in ", "in  ptr", " in ptr", "in ptr ", "In ptr",
                        "in\tptr", "inptr", "in buffer", "in buffer<>", "in buffer<bf16", "in buffer<bf17>",
                        "in buffer<BF16>", "in buffer<bf16>>", "in buffer< bf16>", "in buffer <bf16>",
                        "in buffer<bf16> ", "input ptr", "outin ptr", "in out ptr", "in i32", "buffer<bf16>",
                        "out buffer<ptr>"}) {
    INFO("`" << s << "`");
    CHECK_FALSE(parse_param_type(s).has_value());
  }
}

TEST_CASE("parameter sizes follow the kernelParams layout", "[dtype][param]") {
  CHECK(param_size_bytes(*parse_param_type("i32")) == 4);
  CHECK(param_size_bytes(*parse_param_type("u32")) == 4);
  CHECK(param_size_bytes(*parse_param_type("f32")) == 4);
  CHECK(param_size_bytes(*parse_param_type("i64")) == 8);
  CHECK(param_size_bytes(*parse_param_type("u8")) == 1);
  CHECK(param_size_bytes(*parse_param_type("in ptr")) == 8);
  CHECK(param_size_bytes(*parse_param_type("out buffer<u8>")) == 8);
}

TEST_CASE("scalar parameter ranges are the integer types' ranges", "[dtype][param]") {
  CHECK(param_scalar_range(ParamKind::kI32).min == -2147483648LL);
  CHECK(param_scalar_range(ParamKind::kI32).max == 2147483647ULL);
  CHECK(param_scalar_range(ParamKind::kU32).min == 0);
  CHECK(param_scalar_range(ParamKind::kU32).max == 4294967295ULL);
  CHECK(param_scalar_range(ParamKind::kI64).min == INT64_MIN);
  CHECK(param_scalar_range(ParamKind::kI64).max == static_cast<uint64_t>(INT64_MAX));
  CHECK(param_scalar_range(ParamKind::kU8).max == 255);
  CHECK(param_scalar_range(ParamKind::kF32).max == 0);
}

}  // namespace
}  // namespace kern
