// Element types of buffers and scratch (SPEC §3, manifest v2 `DType`) and the
// scalar / pointer parameter types of kernel interfaces and steps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kern {

/// Element type of a buffer or scratch declaration.
enum class DType : uint8_t { kBf16, kF16, kF32, kFp8e4m3, kI32, kU32, kI64, kU8 };

/// Size of one element in bytes (bf16 = 2, fp8e4m3 = 1, ...).
uint32_t dtype_size_bytes(DType d);
/// Manifest spelling: "bf16", "f16", "f32", "fp8e4m3", "i32", "u32", "i64", "u8".
std::string_view dtype_name(DType d);
/// Parses a manifest spelling; nullopt when unknown.
std::optional<DType> parse_dtype(std::string_view s);
/// safetensors spelling: "BF16", "F16", "F32", "F8_E4M3", "I32", "U32", "I64", "U8".
std::string_view dtype_safetensors_name(DType d);
/// Parses a safetensors dtype; nullopt when kern has no such dtype.
std::optional<DType> parse_safetensors_dtype(std::string_view s);

/// Direction of a pointer parameter; drives data-flow checking (SPEC §4 rules 6, 8).
enum class Access : uint8_t { kIn, kOut, kInOut };

/// What a kernel parameter is: a by-value scalar, an untyped pointer (states)
/// or a typed buffer pointer.
enum class ParamKind : uint8_t { kI32, kU32, kI64, kF32, kU8, kPtr, kBuffer };

/// One kernel parameter type, e.g. `"in buffer<bf16>"`, `"inout ptr"`, `"i32"`.
/// `access` and `dtype` are meaningful only for kPtr/kBuffer (dtype only for kBuffer).
struct ParamType {
  ParamKind kind = ParamKind::kI32;
  Access access = Access::kIn;
  DType dtype = DType::kBf16;

  bool is_pointer() const { return kind == ParamKind::kPtr || kind == ParamKind::kBuffer; }
  bool is_scalar() const { return !is_pointer(); }
  bool reads() const { return is_pointer() && access != Access::kOut; }
  bool writes() const { return is_pointer() && access != Access::kIn; }
  bool operator==(const ParamType& o) const {
    if (kind != o.kind) return false;
    if (is_pointer() && access != o.access) return false;
    if (kind == ParamKind::kBuffer && dtype != o.dtype) return false;
    return true;
  }
};

/// Parses the manifest spelling of a parameter type (exactly the upstream
/// pattern `^(i32|u32|i64|f32|u8|(in|out|inout) (ptr|buffer<DTYPE>))$`);
/// nullopt when malformed.
std::optional<ParamType> parse_param_type(std::string_view s);
/// Manifest spelling of a parameter type (round-trips with parse_param_type).
std::string param_type_name(const ParamType& p);
/// Size in bytes of the value passed to the kernel: 4 for i32/u32/f32,
/// 8 for i64 and pointers, 1 for u8 (the cuLaunchKernel kernelParams layout).
uint32_t param_size_bytes(const ParamType& p);
/// Inclusive integer range a scalar param can hold; for f32 and pointers
/// returns {0, 0} (callers must check kind first).
struct ScalarRange { int64_t min; uint64_t max; };
ScalarRange param_scalar_range(ParamKind k);

}  // namespace kern
