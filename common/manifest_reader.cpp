// Manifest reader, top level: the root object, meta, symbols, states and
// buffers (kernels in kernel_reader.cpp, programs in program_reader.cpp).
#include "common/manifest_reader.h"

#include <limits>

#include "common/json_tree.h"
#include "common/reader_codes.h"
#include "common/reader_context.h"

namespace kern {
namespace {

using reader_detail::ReaderContext;

void read_meta(ReaderContext& ctx, const JsonValue& v, Meta& meta) {
  meta.span = v.span;
  if (!ctx.expect_object(v)) return;
  ctx.check_fields(v, {"version", "model", "spec", "world"});
  if (const JsonValue* version = ctx.required(v, "version")) {
    meta.version_span = version->span;
    if (auto n = ctx.read_uint(*version, std::numeric_limits<uint32_t>::max(), "u32")) meta.version = *n;
  }
  if (const JsonValue* model = ctx.required(v, "model")) {
    if (auto s = ctx.read_string(*model)) meta.model = *s;
  }
  if (const JsonValue* world = v.find("world")) {
    meta.world_span = world->span;
    if (auto n = ctx.read_u64(*world)) meta.world = *n;
  }
  if (const JsonValue* spec = ReaderContext::optional_non_null(v, "spec")) {
    if (!ctx.expect_object(*spec)) return;
    ctx.check_fields(*spec, {"block", "mask_token"});
    SpecMeta sm;
    sm.span = spec->span;
    if (const JsonValue* block = ctx.required(*spec, "block")) {
      sm.block_span = block->span;
      if (auto n = ctx.read_u64(*block)) sm.block = *n;
    }
    if (const JsonValue* mask = ctx.required(*spec, "mask_token")) {
      sm.mask_token_span = mask->span;
      if (auto n = ctx.read_int(*mask, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                                "i64")) {
        sm.mask_token = *n;
      }
    }
    meta.spec = sm;
  }
}

void read_symbols(ReaderContext& ctx, const JsonValue& v, Manifest& out) {
  if (!ctx.expect_object(v)) return;
  for (const JsonMember& m : v.members) {
    if (m.duplicate || !ctx.expect_object(m.value)) continue;
    ctx.check_fields(m.value, {"min", "max"});
    Symbol s;
    s.name = m.key;
    s.name_span = m.key_span;
    s.span = m.value.span;
    if (const JsonValue* min = m.value.find("min")) {
      if (auto n = ctx.read_u64(*min)) s.min = *n;
    }
    if (const JsonValue* max = ctx.required(m.value, "max")) {
      if (auto n = ctx.read_u64(*max)) s.max = *n;
    }
    out.symbols.push_back(std::move(s));
  }
}

void read_states(ReaderContext& ctx, const JsonValue& v, Manifest& out) {
  if (!ctx.expect_object(v)) return;
  for (const JsonMember& m : v.members) {
    if (m.duplicate || !ctx.expect_object(m.value)) continue;
    ctx.check_fields(m.value, {"bytes_per_token", "bytes_fixed", "align"});
    State s;
    s.name = m.key;
    s.name_span = m.key_span;
    s.span = m.value.span;
    if (const JsonValue* f = m.value.find("bytes_per_token")) {
      if (auto n = ctx.read_u64(*f)) s.bytes_per_token = *n;
    }
    if (const JsonValue* f = m.value.find("bytes_fixed")) {
      if (auto n = ctx.read_u64(*f)) s.bytes_fixed = *n;
    }
    if (const JsonValue* f = m.value.find("align")) {
      s.align_span = f->span;
      if (auto n = ctx.read_u64(*f)) s.align = *n;
    }
    out.states.push_back(std::move(s));
  }
}

std::optional<Bound> read_bound(ReaderContext& ctx, const JsonValue& v) {
  Bound b;
  b.span = v.span;
  if (v.type == JsonValue::Type::kInt || (v.type == JsonValue::Type::kUint &&
                                          v.uint_value <= static_cast<uint64_t>(INT64_MAX))) {
    b.kind = Bound::Kind::kInt;
    b.int_value = v.type == JsonValue::Type::kInt ? v.int_value : static_cast<int64_t>(v.uint_value);
    return b;
  }
  if (v.type == JsonValue::Type::kDouble && !v.integral_text) {
    b.kind = Bound::Kind::kFloat;
    b.float_value = v.double_value;
    return b;
  }
  // Remaining forms: an expression (including a u64 constant above i64).
  auto e = ctx.read_expr(v);
  if (!e) return std::nullopt;
  b.kind = Bound::Kind::kExpr;
  b.expr = std::move(*e);
  return b;
}

std::optional<Domain> read_domain(ReaderContext& ctx, const JsonValue& v) {
  if (!ctx.expect_object(v)) return std::nullopt;
  ctx.check_fields(v, {"min", "max", "index_into", "monotone", "unit"});
  Domain d;
  d.span = v.span;
  if (const JsonValue* f = ReaderContext::optional_non_null(v, "min")) d.min = read_bound(ctx, *f);
  if (const JsonValue* f = ReaderContext::optional_non_null(v, "max")) d.max = read_bound(ctx, *f);
  if (const JsonValue* f = ReaderContext::optional_non_null(v, "index_into")) d.index_into = ctx.read_string(*f);
  if (const JsonValue* f = v.find("monotone")) {
    if (auto b = ctx.read_bool(*f)) d.monotone = *b;
  }
  if (const JsonValue* f = v.find("unit")) d.unit = ctx.read_u64(*f);
  const JsonValue* index_into = ReaderContext::optional_non_null(v, "index_into");
  const JsonValue* bound = ReaderContext::optional_non_null(v, "min");
  if (bound == nullptr) bound = ReaderContext::optional_non_null(v, "max");
  if (index_into != nullptr && bound != nullptr) {
    Diagnostic& diag = ctx.error(reader_code::kDomainConflict, v,
                                 "a domain is either `min`/`max` bounds or `index_into`, not both");
    diag.label = "both forms";
    diag.notes.push_back(DiagnosticNote{"`index_into` is here", index_into->span, true});
    diag.help = "keep `index_into` for an index buffer, or `min`/`max` for a value range";
  }
  return d;
}

void read_buffers(ReaderContext& ctx, const JsonValue& v, Manifest& out) {
  if (!ctx.expect_object(v)) return;
  for (const JsonMember& m : v.members) {
    if (m.duplicate || !ctx.expect_object(m.value)) continue;
    ctx.check_fields(m.value, {"dtype", "shape", "class", "domain"});
    Buffer b;
    b.name = m.key;
    b.name_span = m.key_span;
    b.span = m.value.span;
    if (const JsonValue* f = ctx.required(m.value, "dtype")) {
      if (auto d = ctx.read_dtype(*f)) b.dtype = *d;
    }
    if (const JsonValue* f = ctx.required(m.value, "shape")) {
      if (auto s = ctx.read_shape(*f)) b.shape = std::move(*s);
    }
    if (const JsonValue* f = ctx.required(m.value, "class")) {
      if (auto s = ctx.read_string(*f)) {
        if (auto c = parse_buffer_class(*s)) {
          b.cls = *c;
        } else {
          Diagnostic& d = ctx.error(reader_code::kUnknownBufferClass, *f, "unknown buffer class `" + *s + "`");
          d.label = "unknown class";
          std::string close = reader_detail::closest_name(*s, {"input", "output", "weight", "workspace", "carry"});
          d.help = close.empty() ? "the classes are `input`, `output`, `weight`, `workspace`, `carry`"
                                 : "did you mean `" + close + "`?";
        }
      }
    }
    if (const JsonValue* f = ReaderContext::optional_non_null(m.value, "domain")) b.domain = read_domain(ctx, *f);
    out.buffers.push_back(std::move(b));
  }
}

/// `todos`: [{"site": string, "program": string or null, "why": string}].
void read_todos(ReaderContext& ctx, const JsonValue& v, Manifest& m) {
  if (!ctx.expect_array(v)) return;
  for (const JsonValue& item : v.items) {
    if (!ctx.expect_object(item)) continue;
    ctx.check_fields(item, {"site", "program", "why"});
    Todo t;
    t.span = item.span;
    if (const JsonValue* site = ctx.required(item, "site")) {
      if (auto s = ctx.read_string(*site)) t.site = *s;
    }
    if (const JsonValue* why = ctx.required(item, "why")) {
      if (auto s = ctx.read_string(*why)) t.why = *s;
    }
    if (const JsonValue* prog = ReaderContext::optional_non_null(item, "program")) {
      t.program_span = prog->span;
      if (auto s = ctx.read_string(*prog)) t.program = *s;
    }
    m.todos.push_back(std::move(t));
  }
}

}  // namespace

std::optional<Manifest> read_manifest(const SourceFile& file, DiagnosticEngine& diags) {
  size_t errors_before = diags.error_count();
  std::unique_ptr<JsonValue> root = parse_json_tree(file, diags);
  if (!root) return std::nullopt;
  ReaderContext ctx(diags);
  Manifest m;
  if (ctx.expect_object(*root)) {
    ctx.check_fields(*root, {"meta", "symbols", "states", "buffers", "kernels", "programs", "todos"});
    if (const JsonValue* v = ctx.required(*root, "meta")) read_meta(ctx, *v, m.meta);
    if (const JsonValue* v = root->find("symbols")) read_symbols(ctx, *v, m);
    if (const JsonValue* v = root->find("states")) read_states(ctx, *v, m);
    if (const JsonValue* v = ctx.required(*root, "buffers")) read_buffers(ctx, *v, m);
    if (const JsonValue* v = ctx.required(*root, "kernels")) reader_detail::read_kernels(ctx, *v, m);
    if (const JsonValue* v = ctx.required(*root, "programs")) reader_detail::read_programs(ctx, *v, m);
    if (const JsonValue* v = ReaderContext::optional_non_null(*root, "todos")) read_todos(ctx, *v, m);
  }
  // Diagnostics carry offsets; their JSON pointers come from the tree, once.
  resolve_pointers(diags.mutable_diagnostics(), *root);
  if (diags.error_count() != errors_before) return std::nullopt;
  return m;
}

}  // namespace kern
