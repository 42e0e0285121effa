// Manifest reader: `kernels` (interface params + impl: scratch and steps,
// SPEC §3). Shape only; step/interface agreement is kern-verify's (SPEC §4
// rules 5-6).
#include <limits>

#include "common/reader_codes.h"
#include "common/reader_context.h"

namespace kern::reader_detail {
namespace {

const std::initializer_list<std::string_view> kStepArgTags = {"arg", "scratch", "i32", "u32", "i64", "f32", "u8"};

std::optional<StepArg> read_step_arg(ReaderContext& ctx, const JsonValue& v) {
  if (!ctx.expect_object(v)) return std::nullopt;
  const JsonMember* tag = ctx.read_tag(v, kStepArgTags, "step argument");
  if (tag == nullptr) return std::nullopt;
  StepArg a;
  a.span = v.span;
  if (tag->key == "scratch") {
    ctx.check_fields(v, {"scratch", "offset"});
    a.kind = StepArg::Kind::kScratch;
    auto name = ctx.read_string(tag->value);
    if (!name) return std::nullopt;
    a.scratch = *name;
    if (const JsonValue* off = v.find("offset")) {
      a.offset_span = off->span;
      auto n = ctx.read_u64(*off);
      if (!n) return std::nullopt;
      a.offset = *n;
    }
    return a;
  }
  ctx.check_fields(v, {tag->key});
  if (tag->key == "arg") {
    a.kind = StepArg::Kind::kArg;
    auto n = ctx.read_u64(tag->value);
    if (!n) return std::nullopt;
    a.index = *n;
    return a;
  }
  if (tag->key == "i32") a.kind = StepArg::Kind::kI32;
  if (tag->key == "u32") a.kind = StepArg::Kind::kU32;
  if (tag->key == "i64") a.kind = StepArg::Kind::kI64;
  if (tag->key == "f32") a.kind = StepArg::Kind::kF32;
  if (tag->key == "u8") a.kind = StepArg::Kind::kU8;
  if (!ctx.read_literal(tag->key, tag->value, a.int_value, a.f32_value)) return std::nullopt;
  return a;
}

void read_step(ReaderContext& ctx, const JsonValue& v, Kernel& k) {
  if (!ctx.expect_object(v)) return;
  ctx.check_fields(v, {"symbol", "params", "block", "grid", "shared_mem", "cubin", "sha256", "pdl", "args"});
  Step s;
  s.span = v.span;
  if (const JsonValue* f = ctx.required(v, "symbol")) {
    s.symbol_span = f->span;
    if (auto str = ctx.read_string(*f)) s.symbol = *str;
  }
  if (const JsonValue* f = ctx.required(v, "params")) {
    s.params_span = f->span;
    ctx.read_params(*f, s.params, s.param_spans);
  }
  if (const JsonValue* f = ctx.required(v, "block")) {
    s.block_span = f->span;
    if (ctx.expect_array_of(*f, 3)) {
      for (size_t i = 0; i < 3; ++i) {
        if (auto n = ctx.read_uint(f->items[i], std::numeric_limits<uint32_t>::max(), "u32")) {
          s.block[i] = static_cast<uint32_t>(*n);
        }
      }
    }
  }
  if (const JsonValue* f = ctx.required(v, "grid")) {
    s.grid_span = f->span;
    if (ctx.expect_array_of(*f, 3)) {
      for (const JsonValue& item : f->items) {
        if (auto e = ctx.read_expr(item)) s.grid.push_back(std::move(*e));
      }
    }
  }
  if (const JsonValue* f = ReaderContext::optional_non_null(v, "shared_mem")) s.shared_mem = ctx.read_expr(*f);
  if (const JsonValue* f = ReaderContext::optional_non_null(v, "cubin")) {
    s.cubin_span = f->span;
    s.cubin = ctx.read_string(*f);
  }
  if (const JsonValue* f = ReaderContext::optional_non_null(v, "sha256")) {
    s.sha256_span = f->span;
    s.sha256 = ctx.read_string(*f);
  }
  if (const JsonValue* f = v.find("pdl")) {
    if (auto b = ctx.read_bool(*f)) s.pdl = *b;
  }
  if (const JsonValue* f = ctx.required(v, "args")) {
    s.args_span = f->span;
    if (ctx.expect_array(*f)) {
      s.args.reserve(f->items.size());
      for (const JsonValue& item : f->items) {
        if (auto a = read_step_arg(ctx, item)) s.args.push_back(std::move(*a));
      }
    }
  }
  k.steps.push_back(std::move(s));
}

void read_impl(ReaderContext& ctx, const JsonValue& v, Kernel& k) {
  if (!ctx.expect_object(v)) return;
  ctx.check_fields(v, {"scratch", "steps"});
  if (const JsonValue* scratch = v.find("scratch"); scratch != nullptr && ctx.expect_object(*scratch)) {
    for (const JsonMember& m : scratch->members) {
      if (m.duplicate || !ctx.expect_object(m.value)) continue;
      ctx.check_fields(m.value, {"dtype", "shape"});
      Scratch s;
      s.name = m.key;
      s.name_span = m.key_span;
      s.span = m.value.span;
      if (const JsonValue* f = ctx.required(m.value, "dtype")) {
        if (auto d = ctx.read_dtype(*f)) s.dtype = *d;
      }
      if (const JsonValue* f = ctx.required(m.value, "shape")) {
        if (auto shape = ctx.read_shape(*f)) s.shape = std::move(*shape);
      }
      k.scratch.push_back(std::move(s));
    }
  }
  if (const JsonValue* steps = ctx.required(v, "steps"); steps != nullptr && ctx.expect_array(*steps)) {
    k.steps_span = steps->span;
    for (const JsonValue& step : steps->items) read_step(ctx, step, k);
  }
}

}  // namespace

void read_kernels(ReaderContext& ctx, const JsonValue& kernels, Manifest& out) {
  if (!ctx.expect_object(kernels)) return;
  for (const JsonMember& m : kernels.members) {
    if (m.duplicate || !ctx.expect_object(m.value)) continue;
    ctx.check_fields(m.value, {"params", "impl"});
    Kernel k;
    k.name = m.key;
    k.name_span = m.key_span;
    k.span = m.value.span;
    if (const JsonValue* f = ctx.required(m.value, "params")) {
      k.params_span = f->span;
      ctx.read_params(*f, k.params, k.param_spans);
    }
    if (const JsonValue* f = ctx.required(m.value, "impl")) read_impl(ctx, *f, k);
    out.kernels.push_back(std::move(k));
  }
}

}  // namespace kern::reader_detail
