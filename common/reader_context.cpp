// Typed accessors over the JSON tree for the manifest reader (see
// reader_context.h). Mirrors serde's strictness: integers are never read
// from floats, unsigned fields reject negatives, ranges are exact.
#include "common/reader_context.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "common/reader_codes.h"

namespace kern::reader_detail {
namespace {

std::string subject_of(const JsonValue& v) {
  std::string s = json_subject(v);
  return s.empty() ? "manifest" : s;
}

std::string quote_list(std::initializer_list<std::string_view> names) {
  std::string out;
  for (auto n : names) {
    if (!out.empty()) out += ", ";
    out += "`" + std::string(n) + "`";
  }
  return out;
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: insert, delete, substitute, and swap of two
  // adjacent characters each cost 1 ("f23" is one edit from "f32").
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string closest_name(std::string_view name, std::initializer_list<std::string_view> candidates) {
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (auto c : candidates) {
    size_t d = edit_distance(name, c);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  }
  // About one edit per three characters, at least one.
  size_t limit = std::max<size_t>(1, (std::max(name.size(), best.size()) + 2) / 3);
  return best_distance <= limit ? best : std::string();
}

Diagnostic& ReaderContext::error(const char* code, const JsonValue& at, const std::string& text) {
  return diags_.error(code, subject_of(at) + ": " + text, at.span);
}

void ReaderContext::wrong_type(const JsonValue& v, std::string_view expected) {
  Diagnostic& d = error(reader_code::kWrongType, v,
                        "expected " + std::string(expected) + ", found " + std::string(json_type_name(v)));
  d.label = "expected " + std::string(expected);
}

bool ReaderContext::expect_object(const JsonValue& v) {
  if (v.type == JsonValue::Type::kObject) return true;
  wrong_type(v, "an object");
  return false;
}

bool ReaderContext::expect_array(const JsonValue& v) {
  if (v.type == JsonValue::Type::kArray) return true;
  wrong_type(v, "an array");
  return false;
}

bool ReaderContext::expect_array_of(const JsonValue& v, size_t n) {
  if (!expect_array(v)) return false;
  if (v.items.size() == n) return true;
  Diagnostic& d = error(reader_code::kWrongLength, v,
                        "expected an array of " + std::to_string(n) + " elements, found " +
                            std::to_string(v.items.size()));
  d.label = "expected " + std::to_string(n) + " elements";
  return false;
}

void ReaderContext::check_fields(const JsonValue& obj, std::initializer_list<std::string_view> known) {
  for (const JsonMember& m : obj.members) {
    if (m.duplicate) continue;
    if (std::find(known.begin(), known.end(), m.key) != known.end()) continue;
    Diagnostic& d = diags_.error(reader_code::kUnknownField, subject_of(obj) + ": unknown field `" + m.key + "`",
                                 m.key_span);
    d.label = "unknown field";
    std::string close = closest_name(m.key, known);
    if (!close.empty()) {
      d.help = "did you mean `" + close + "`?";
    } else if (known.size() > 0) {
      d.help = "the fields allowed here are " + quote_list(known);
    } else {
      d.help = "no fields are allowed here";
    }
  }
}

const JsonValue* ReaderContext::required(const JsonValue& obj, std::string_view key) {
  if (const JsonValue* v = obj.find(key)) return v;
  Diagnostic& d = error(reader_code::kMissingField, obj, "missing required field `" + std::string(key) + "`");
  d.label = "missing `" + std::string(key) + "`";
  return nullptr;
}

const JsonValue* ReaderContext::optional_non_null(const JsonValue& obj, std::string_view key) {
  const JsonValue* v = obj.find(key);
  if (v == nullptr || v->type == JsonValue::Type::kNull) return nullptr;
  return v;
}

std::optional<uint64_t> ReaderContext::read_uint(const JsonValue& v, uint64_t max, std::string_view type_name) {
  std::string range = std::string(type_name) + " (0..=" + std::to_string(max) + ")";
  if (v.type == JsonValue::Type::kUint) {
    if (v.uint_value <= max) return v.uint_value;
    error(reader_code::kOutOfRange, v, std::to_string(v.uint_value) + " is out of range for " + range).label =
        "out of range";
    return std::nullopt;
  }
  if (v.type == JsonValue::Type::kInt || (v.type == JsonValue::Type::kDouble && v.integral_text)) {
    std::string text = v.type == JsonValue::Type::kInt ? std::to_string(v.int_value) : "the integer";
    error(reader_code::kOutOfRange, v, text + " is out of range for " + range).label = "out of range";
    return std::nullopt;
  }
  wrong_type(v, "an unsigned integer");
  return std::nullopt;
}

std::optional<int64_t> ReaderContext::read_int(const JsonValue& v, int64_t min, int64_t max,
                                               std::string_view type_name) {
  std::string range = std::string(type_name) + " (" + std::to_string(min) + "..=" + std::to_string(max) + ")";
  if (v.type == JsonValue::Type::kUint) {
    if (v.uint_value <= static_cast<uint64_t>(max)) return static_cast<int64_t>(v.uint_value);
    error(reader_code::kOutOfRange, v, std::to_string(v.uint_value) + " is out of range for " + range).label =
        "out of range";
    return std::nullopt;
  }
  if (v.type == JsonValue::Type::kInt) {
    if (v.int_value >= min && v.int_value <= max) return v.int_value;
    error(reader_code::kOutOfRange, v, std::to_string(v.int_value) + " is out of range for " + range).label =
        "out of range";
    return std::nullopt;
  }
  if (v.type == JsonValue::Type::kDouble && v.integral_text) {
    error(reader_code::kOutOfRange, v, "the integer is out of range for " + range).label = "out of range";
    return std::nullopt;
  }
  wrong_type(v, "an integer");
  return std::nullopt;
}

std::optional<double> ReaderContext::read_f64(const JsonValue& v) {
  if (v.is_number()) return v.double_value;
  wrong_type(v, "a number");
  return std::nullopt;
}

std::optional<float> ReaderContext::read_f32(const JsonValue& v) {
  auto d = read_f64(v);
  if (!d) return std::nullopt;
  if (!std::isfinite(*d) || std::fabs(*d) > static_cast<double>(FLT_MAX)) {
    error(reader_code::kOutOfRange, v, "the number is out of range for f32").label = "out of range";
    return std::nullopt;
  }
  return static_cast<float>(*d);
}

std::optional<std::string> ReaderContext::read_string(const JsonValue& v) {
  if (v.type == JsonValue::Type::kString) return v.string_value;
  wrong_type(v, "a string");
  return std::nullopt;
}

std::optional<bool> ReaderContext::read_bool(const JsonValue& v) {
  if (v.type == JsonValue::Type::kBool) return v.bool_value;
  wrong_type(v, "a boolean");
  return std::nullopt;
}

std::optional<Expr> ReaderContext::read_expr(const JsonValue& v) {
  constexpr auto kExpected = "an expression (an integer, {\"sym\": s}, {\"ceil_div\": [e, c]} or {\"mul\": [e, c]})";
  if (v.type == JsonValue::Type::kUint || v.type == JsonValue::Type::kInt ||
      (v.type == JsonValue::Type::kDouble && v.integral_text)) {
    auto value = read_u64(v);
    if (!value) return std::nullopt;
    Expr e = Expr::constant(*value);
    e.span = v.span;
    return e;
  }
  if (v.type == JsonValue::Type::kString) {
    Diagnostic& d = error(reader_code::kWrongType, v, std::string("expected ") + kExpected + ", found a string");
    d.label = "expected an expression";
    d.help = "a symbol is written {\"sym\": \"" + v.string_value + "\"}";
    return std::nullopt;
  }
  if (v.type != JsonValue::Type::kObject) {
    wrong_type(v, kExpected);
    return std::nullopt;
  }
  std::vector<const JsonMember*> members;
  for (const JsonMember& m : v.members) {
    if (!m.duplicate) members.push_back(&m);
  }
  const std::initializer_list<std::string_view> kOps = {"sym", "ceil_div", "mul"};
  if (members.size() != 1 || std::find(kOps.begin(), kOps.end(), members[0]->key) == kOps.end()) {
    std::string found;
    for (const JsonMember* m : members) found += (found.empty() ? "`" : ", `") + m->key + "`";
    Diagnostic& d = error(reader_code::kBadExpression, v,
                          "an expression object needs exactly one key of `sym`, `ceil_div`, `mul`; found " +
                              (found.empty() ? std::string("none") : found));
    d.label = "not an expression";
    if (members.size() == 1) {
      std::string close = closest_name(members[0]->key, kOps);
      if (!close.empty()) d.help = "did you mean `" + close + "`?";
    }
    return std::nullopt;
  }
  const JsonMember& op = *members[0];
  if (op.key == "sym") {
    auto name = read_string(op.value);
    if (!name) return std::nullopt;
    Expr e = Expr::symbol(*name);
    e.span = v.span;
    return e;
  }
  if (!expect_array_of(op.value, 2)) return std::nullopt;
  auto lhs = read_expr(op.value.items[0]);
  auto rhs = read_u64(op.value.items[1]);
  if (!lhs || !rhs) return std::nullopt;
  Expr e = op.key == "mul" ? Expr::mul(std::move(*lhs), *rhs) : Expr::ceil_div(std::move(*lhs), *rhs);
  e.span = v.span;
  return e;
}

std::optional<std::vector<Dim>> ReaderContext::read_shape(const JsonValue& v) {
  if (!expect_array(v)) return std::nullopt;
  std::vector<Dim> dims;
  bool ok = true;
  for (const JsonValue& item : v.items) {
    Dim d;
    d.span = item.span;
    if (item.type == JsonValue::Type::kString) {
      d.value = item.string_value;
    } else if (item.is_number()) {
      auto n = read_u64(item);
      if (!n) {
        ok = false;
        continue;
      }
      d.value = *n;
    } else {
      wrong_type(item, "a dimension (an integer or a symbol name)");
      ok = false;
      continue;
    }
    dims.push_back(std::move(d));
  }
  if (!ok) return std::nullopt;
  return dims;
}

std::optional<DType> ReaderContext::read_dtype(const JsonValue& v) {
  auto s = read_string(v);
  if (!s) return std::nullopt;
  if (auto d = parse_dtype(*s)) return d;
  Diagnostic& d = error(reader_code::kUnknownDType, v, "unknown dtype `" + *s + "`");
  d.label = "unknown dtype";
  std::string close = closest_name(*s, {"bf16", "f16", "f32", "fp8e4m3", "i32", "u32", "i64", "u8"});
  d.help = close.empty() ? "the dtypes are `bf16`, `f16`, `f32`, `fp8e4m3`, `i32`, `u32`, `i64`, `u8`"
                         : "did you mean `" + close + "`?";
  return std::nullopt;
}

bool ReaderContext::read_params(const JsonValue& v, std::vector<ParamType>& params, std::vector<SourceSpan>& spans) {
  if (!expect_array(v)) return false;
  bool ok = true;
  for (const JsonValue& item : v.items) {
    auto s = read_string(item);
    if (!s) {
      ok = false;
      continue;
    }
    auto p = parse_param_type(*s);
    if (!p) {
      Diagnostic& d = error(reader_code::kBadParamType, item, "malformed parameter type `" + *s + "`");
      d.label = "malformed parameter type";
      d.help =
          "a parameter type is `i32`, `u32`, `i64`, `f32`, `u8`, or `in`/`out`/`inout` followed by one space and "
          "`ptr` or `buffer<DTYPE>`";
      ok = false;
      continue;
    }
    params.push_back(*p);
    spans.push_back(item.span);
  }
  return ok;
}

bool ReaderContext::read_literal(std::string_view tag, const JsonValue& v, int64_t& int_value, float& f32_value) {
  if (tag == "f32") {
    auto f = read_f32(v);
    if (f) f32_value = *f;
    return f.has_value();
  }
  std::optional<int64_t> n;
  if (tag == "i32") {
    n = read_int(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), "i32");
  } else if (tag == "u32") {
    n = read_int(v, 0, std::numeric_limits<uint32_t>::max(), "u32");
  } else if (tag == "i64") {
    n = read_int(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), "i64");
  } else if (tag == "u8") {
    n = read_int(v, 0, 255, "u8");
  }
  if (n) int_value = *n;
  return n.has_value();
}

const JsonMember* ReaderContext::read_tag(const JsonValue& obj, std::initializer_list<std::string_view> tags,
                                          std::string_view what) {
  std::vector<const JsonMember*> found;
  for (const JsonMember& m : obj.members) {
    if (!m.duplicate && std::find(tags.begin(), tags.end(), m.key) != tags.end()) found.push_back(&m);
  }
  if (found.size() == 1) return found[0];
  if (found.empty()) {
    Diagnostic& d = error(reader_code::kBadArgTag, obj, std::string(what) + " has no tag");
    d.label = "no tag";
    for (const JsonMember& m : obj.members) {
      std::string close = closest_name(m.key, tags);
      if (!close.empty() && !m.duplicate) {
        d.help = "did you mean `" + close + "` instead of `" + m.key + "`?";
        break;
      }
    }
    if (d.help.empty()) d.help = "write exactly one of " + quote_list(tags);
    return nullptr;
  }
  Diagnostic& d = error(reader_code::kBadArgTag, obj,
                        std::string(what) + " has " + std::to_string(found.size()) + " tags (`" + found[0]->key +
                            "` and `" + found[1]->key + "`)");
  d.label = "several tags";
  d.notes.push_back(DiagnosticNote{"the second tag is here", found[1]->key_span, true});
  d.help = "an argument is exactly one of " + quote_list(tags) + "; split it or remove one";
  return nullptr;
}

}  // namespace kern::reader_detail
