// The one mapping between the manifest model's enums (common/dtype.h,
// common/manifest.h) and the plan's (schemas/plan.fbs): both number their
// enumerators alike, which the static_asserts below prove for every one, so
// the conversions are plain casts. kern-verify writes through to_plan,
// kern-load and --dump read through from_plan; nobody else casts.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "common/manifest.h"
#include "common/plan_format.h"

namespace kern {

namespace detail {
template <typename A, typename B>
constexpr bool same_number(A a, B b) {
  return static_cast<uint8_t>(a) == static_cast<uint8_t>(b);
}
}  // namespace detail

static_assert(detail::same_number(DType::kBf16, plan::DType::bf16) && detail::same_number(DType::kF16, plan::DType::f16) &&
              detail::same_number(DType::kF32, plan::DType::f32) &&
              detail::same_number(DType::kFp8e4m3, plan::DType::fp8e4m3) &&
              detail::same_number(DType::kI32, plan::DType::i32) && detail::same_number(DType::kU32, plan::DType::u32) &&
              detail::same_number(DType::kI64, plan::DType::i64) && detail::same_number(DType::kU8, plan::DType::u8) &&
              plan::DType::MAX == plan::DType::u8);
static_assert(detail::same_number(ParamKind::kI32, plan::ParamKind::i32) &&
              detail::same_number(ParamKind::kU32, plan::ParamKind::u32) &&
              detail::same_number(ParamKind::kI64, plan::ParamKind::i64) &&
              detail::same_number(ParamKind::kF32, plan::ParamKind::f32) &&
              detail::same_number(ParamKind::kU8, plan::ParamKind::u8) &&
              detail::same_number(ParamKind::kPtr, plan::ParamKind::ptr) &&
              detail::same_number(ParamKind::kBuffer, plan::ParamKind::buffer) &&
              plan::ParamKind::MAX == plan::ParamKind::buffer);
static_assert(detail::same_number(Access::kIn, plan::Access::in_) && detail::same_number(Access::kOut, plan::Access::out) &&
              detail::same_number(Access::kInOut, plan::Access::inout) && plan::Access::MAX == plan::Access::inout);
static_assert(detail::same_number(BufferClass::kInput, plan::BufferClass::input) &&
              detail::same_number(BufferClass::kOutput, plan::BufferClass::output) &&
              detail::same_number(BufferClass::kWeight, plan::BufferClass::weight) &&
              detail::same_number(BufferClass::kWorkspace, plan::BufferClass::workspace) &&
              detail::same_number(BufferClass::kCarry, plan::BufferClass::carry) &&
              plan::BufferClass::MAX == plan::BufferClass::carry);

constexpr plan::DType to_plan(DType d) { return static_cast<plan::DType>(d); }
constexpr plan::ParamKind to_plan(ParamKind k) { return static_cast<plan::ParamKind>(k); }
constexpr plan::Access to_plan(Access a) { return static_cast<plan::Access>(a); }
constexpr plan::BufferClass to_plan(BufferClass c) { return static_cast<plan::BufferClass>(c); }
inline plan::Param to_plan(const ParamType& p) { return plan::Param(to_plan(p.kind), to_plan(p.access), to_plan(p.dtype)); }

/// Plan enums back to the model's. The values must be in range: the
/// FlatBuffers Verifier does not check enums, plan validation does
/// (kern-load/plan_validate.cpp); --dump checks before it converts.
constexpr DType from_plan(plan::DType d) { return static_cast<DType>(d); }
constexpr ParamKind from_plan(plan::ParamKind k) { return static_cast<ParamKind>(k); }
constexpr Access from_plan(plan::Access a) { return static_cast<Access>(a); }
inline ParamType from_plan(const plan::Param& p) {
  return ParamType{from_plan(p.kind()), from_plan(p.access()), from_plan(p.dtype())};
}

}  // namespace kern
