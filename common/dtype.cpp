// Element types and kernel parameter types (SPEC §3): spellings, sizes and
// the strict parser of the upstream ParamType pattern.
#include "common/dtype.h"

#include <array>
#include <limits>

namespace kern {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::string_view safetensors;
  uint32_t size_bytes;
};

constexpr std::array<DTypeInfo, 8> kDTypes = {{
    {DType::kBf16, "bf16", "BF16", 2},
    {DType::kF16, "f16", "F16", 2},
    {DType::kF32, "f32", "F32", 4},
    {DType::kFp8e4m3, "fp8e4m3", "F8_E4M3", 1},
    {DType::kI32, "i32", "I32", 4},
    {DType::kU32, "u32", "U32", 4},
    {DType::kI64, "i64", "I64", 8},
    {DType::kU8, "u8", "U8", 1},
}};

const DTypeInfo& info(DType d) {
  for (const auto& i : kDTypes) {
    if (i.dtype == d) return i;
  }
  return kDTypes[0];  // unreachable for valid enum values
}

struct ScalarInfo {
  ParamKind kind;
  std::string_view name;
};

constexpr std::array<ScalarInfo, 5> kScalars = {{
    {ParamKind::kI32, "i32"},
    {ParamKind::kU32, "u32"},
    {ParamKind::kI64, "i64"},
    {ParamKind::kF32, "f32"},
    {ParamKind::kU8, "u8"},
}};

}  // namespace

uint32_t dtype_size_bytes(DType d) { return info(d).size_bytes; }

std::string_view dtype_name(DType d) { return info(d).name; }

std::optional<DType> parse_dtype(std::string_view s) {
  for (const auto& i : kDTypes) {
    if (i.name == s) return i.dtype;
  }
  return std::nullopt;
}

std::string_view dtype_safetensors_name(DType d) { return info(d).safetensors; }

std::optional<DType> parse_safetensors_dtype(std::string_view s) {
  for (const auto& i : kDTypes) {
    if (i.safetensors == s) return i.dtype;
  }
  return std::nullopt;
}

std::optional<ParamType> parse_param_type(std::string_view s) {
  ParamType p;
  for (const auto& sc : kScalars) {
    if (sc.name == s) {
      p.kind = sc.kind;
      return p;
    }
  }
  // "(in|out|inout) (ptr|buffer<DTYPE>)": exactly one space, nothing else.
  size_t space = s.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view access = s.substr(0, space);
  std::string_view rest = s.substr(space + 1);
  if (access == "in") {
    p.access = Access::kIn;
  } else if (access == "out") {
    p.access = Access::kOut;
  } else if (access == "inout") {
    p.access = Access::kInOut;
  } else {
    return std::nullopt;
  }
  if (rest == "ptr") {
    p.kind = ParamKind::kPtr;
    return p;
  }
  constexpr std::string_view kOpen = "buffer<";
  if (rest.size() <= kOpen.size() + 1 || rest.substr(0, kOpen.size()) != kOpen || rest.back() != '>') {
    return std::nullopt;
  }
  auto dtype = parse_dtype(rest.substr(kOpen.size(), rest.size() - kOpen.size() - 1));
  if (!dtype) return std::nullopt;
  p.kind = ParamKind::kBuffer;
  p.dtype = *dtype;
  return p;
}

std::string param_type_name(const ParamType& p) {
  for (const auto& sc : kScalars) {
    if (sc.kind == p.kind) return std::string(sc.name);
  }
  std::string out;
  switch (p.access) {
    case Access::kIn: out = "in "; break;
    case Access::kOut: out = "out "; break;
    case Access::kInOut: out = "inout "; break;
  }
  if (p.kind == ParamKind::kPtr) return out + "ptr";
  return out + "buffer<" + std::string(dtype_name(p.dtype)) + ">";
}

uint32_t param_size_bytes(const ParamType& p) {
  switch (p.kind) {
    case ParamKind::kI32:
    case ParamKind::kU32:
    case ParamKind::kF32: return 4;
    case ParamKind::kU8: return 1;
    case ParamKind::kI64:
    case ParamKind::kPtr:
    case ParamKind::kBuffer: return 8;
  }
  return 8;
}

ScalarRange param_scalar_range(ParamKind k) {
  switch (k) {
    case ParamKind::kI32:
      return {std::numeric_limits<int32_t>::min(), static_cast<uint64_t>(std::numeric_limits<int32_t>::max())};
    case ParamKind::kU32: return {0, std::numeric_limits<uint32_t>::max()};
    case ParamKind::kI64:
      return {std::numeric_limits<int64_t>::min(), static_cast<uint64_t>(std::numeric_limits<int64_t>::max())};
    case ParamKind::kU8: return {0, 255};
    case ParamKind::kF32:
    case ParamKind::kPtr:
    case ParamKind::kBuffer: return {0, 0};
  }
  return {0, 0};
}

}  // namespace kern
