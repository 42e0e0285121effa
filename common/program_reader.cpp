// Manifest reader: `programs` (dispatch lists with tagged arguments, SPEC
// §3). Shape only; name resolution and type agreement are kern-verify's
// (SPEC §4 rules 7-8).
#include "common/reader_codes.h"
#include "common/reader_context.h"

namespace kern::reader_detail {
namespace {

const std::initializer_list<std::string_view> kArgTags = {"buf", "state", "sym", "expr", "i32",
                                                          "u32", "i64",   "f32", "u8"};

std::optional<Arg> read_arg(ReaderContext& ctx, const JsonValue& v) {
  if (!ctx.expect_object(v)) return std::nullopt;
  const JsonMember* tag = ctx.read_tag(v, kArgTags, "dispatch argument");
  if (tag == nullptr) return std::nullopt;
  Arg a;
  a.span = v.span;
  const std::string& t = tag->key;
  if (t == "buf" || t == "state" || t == "sym") {
    if (t == "sym") {
      ctx.check_fields(v, {"sym"});
    } else {
      ctx.check_fields(v, {t, "offset"});
    }
    a.kind = t == "buf" ? Arg::Kind::kBuf : t == "state" ? Arg::Kind::kState : Arg::Kind::kSym;
    a.name_span = tag->value.span;
    auto name = ctx.read_string(tag->value);
    if (!name) return std::nullopt;
    a.name = *name;
    if (const JsonValue* off = v.find("offset"); off != nullptr && t != "sym") {
      a.offset_span = off->span;
      auto n = ctx.read_u64(*off);
      if (!n) return std::nullopt;
      a.offset = *n;
    }
    return a;
  }
  ctx.check_fields(v, {t});
  if (t == "expr") {
    a.kind = Arg::Kind::kExpr;
    a.expr = ctx.read_expr(tag->value);
    if (!a.expr) return std::nullopt;
    return a;
  }
  if (t == "i32") a.kind = Arg::Kind::kI32;
  if (t == "u32") a.kind = Arg::Kind::kU32;
  if (t == "i64") a.kind = Arg::Kind::kI64;
  if (t == "f32") a.kind = Arg::Kind::kF32;
  if (t == "u8") a.kind = Arg::Kind::kU8;
  if (!ctx.read_literal(t, tag->value, a.int_value, a.f32_value)) return std::nullopt;
  return a;
}

void read_dispatch(ReaderContext& ctx, const JsonValue& v, Program& p) {
  if (!ctx.expect_object(v)) return;
  ctx.check_fields(v, {"kernel", "args", "label"});
  Dispatch d;
  d.span = v.span;
  if (const JsonValue* f = ctx.required(v, "kernel")) {
    d.kernel_span = f->span;
    if (auto s = ctx.read_string(*f)) d.kernel = *s;
  }
  if (const JsonValue* f = ctx.required(v, "args"); f != nullptr && ctx.expect_array(*f)) {
    d.args_span = f->span;
    d.args.reserve(f->items.size());
    for (const JsonValue& item : f->items) {
      if (auto a = read_arg(ctx, item)) d.args.push_back(std::move(*a));
    }
  }
  if (const JsonValue* f = ReaderContext::optional_non_null(v, "label")) d.label = ctx.read_string(*f);
  p.dispatches.push_back(std::move(d));
}

}  // namespace

void read_programs(ReaderContext& ctx, const JsonValue& programs, Manifest& out) {
  if (!ctx.expect_object(programs)) return;
  for (const JsonMember& m : programs.members) {
    if (m.duplicate || !ctx.expect_object(m.value)) continue;
    ctx.check_fields(m.value, {"dispatches"});
    Program p;
    p.name = m.key;
    p.name_span = m.key_span;
    p.span = m.value.span;
    if (const JsonValue* f = ctx.required(m.value, "dispatches"); f != nullptr && ctx.expect_array(*f)) {
      p.dispatches.reserve(f->items.size());
      for (const JsonValue& item : f->items) read_dispatch(ctx, item, p);
    }
    out.programs.push_back(std::move(p));
  }
}

}  // namespace kern::reader_detail
