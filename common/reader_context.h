// Internal to the manifest reader (manifest_reader*.cpp): typed accessors
// over the span-carrying JSON tree that report schema mistakes as
// diagnostics and keep going, so one read reports every mistake. Each
// accessor returns nullopt (or false) after reporting; callers then skip
// the value without reporting again (no cascades).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "common/diagnostic.h"
#include "common/expr.h"
#include "common/json_tree.h"
#include "common/manifest.h"

namespace kern::reader_detail {

/// Edit distance between two names in bytes (insertions, deletions,
/// substitutions and adjacent transpositions cost 1).
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `name` when it is close enough to be a typo
/// (distance <= max(1, ceil(len/3)), len the longer name); empty when none is.
std::string closest_name(std::string_view name, std::initializer_list<std::string_view> candidates);

/// Diagnostics helpers bound to one engine; every message starts with the
/// value's dotted subject ("buffers.x.shape: ...").
class ReaderContext {
 public:
  explicit ReaderContext(DiagnosticEngine& diags) : diags_(diags) {}

  /// Reports `code` at `at` with message "<subject>: <text>".
  Diagnostic& error(const char* code, const JsonValue& at, const std::string& text);
  /// Reports E0006 "expected <expected>, found <actual type>" at `v`.
  void wrong_type(const JsonValue& v, std::string_view expected);

  /// True when `v` is an object; reports E0006 otherwise.
  bool expect_object(const JsonValue& v);
  /// True when `v` is an array; reports E0006 otherwise.
  bool expect_array(const JsonValue& v);
  /// True when `v` is an array of exactly `n` elements; reports E0006/E0013.
  bool expect_array_of(const JsonValue& v, size_t n);
  /// Reports E0005 at the key of every member of `obj` not in `known`, with
  /// a help naming the closest known field. Duplicate members are skipped.
  void check_fields(const JsonValue& obj, std::initializer_list<std::string_view> known);
  /// The member `key` of `obj`; reports E0007 at `obj` when absent.
  const JsonValue* required(const JsonValue& obj, std::string_view key);
  /// The member `key` of `obj`, nullptr when absent or JSON null.
  static const JsonValue* optional_non_null(const JsonValue& obj, std::string_view key);

  /// An unsigned integer <= `max`; `type_name` ("u32") names the range in messages.
  std::optional<uint64_t> read_uint(const JsonValue& v, uint64_t max, std::string_view type_name);
  std::optional<uint64_t> read_u64(const JsonValue& v) { return read_uint(v, UINT64_MAX, "u64"); }
  /// A signed integer within [min, max].
  std::optional<int64_t> read_int(const JsonValue& v, int64_t min, int64_t max, std::string_view type_name);
  /// A JSON number representable as a finite f32 (integers allowed).
  std::optional<float> read_f32(const JsonValue& v);
  /// A JSON number as f64 (integers allowed).
  std::optional<double> read_f64(const JsonValue& v);
  std::optional<std::string> read_string(const JsonValue& v);
  std::optional<bool> read_bool(const JsonValue& v);
  /// An expression: integer | {"sym": s} | {"ceil_div": [e, u64]} | {"mul": [e, u64]}.
  std::optional<Expr> read_expr(const JsonValue& v);
  /// A shape: an array of dims, each a u64 element count or a symbol name.
  std::optional<std::vector<Dim>> read_shape(const JsonValue& v);
  /// A dtype string (E0010 when unknown).
  std::optional<DType> read_dtype(const JsonValue& v);
  /// An array of parameter-type strings (E0009 for each malformed one).
  bool read_params(const JsonValue& v, std::vector<ParamType>& params, std::vector<SourceSpan>& spans);

  /// A typed literal for tag `tag` ("i32", "u32", "i64", "f32", "u8"):
  /// integers checked against the tag's range (E0008) into `int_value`,
  /// f32 into `f32_value`. False after reporting.
  bool read_literal(std::string_view tag, const JsonValue& v, int64_t& int_value, float& f32_value);

  /// The single tag of a tagged object (dispatch or step argument): the one
  /// member whose key is in `tags`. Reports E0014 when there are zero or
  /// several; `what` names the object in messages ("dispatch argument").
  const JsonMember* read_tag(const JsonValue& obj, std::initializer_list<std::string_view> tags,
                             std::string_view what);

 private:
  DiagnosticEngine& diags_;
};

// Section readers, one per file (manifest_reader.cpp, kernel_reader.cpp,
// program_reader.cpp). Each appends to `out` what it could read.
void read_kernels(ReaderContext& ctx, const JsonValue& kernels, Manifest& out);
void read_programs(ReaderContext& ctx, const JsonValue& programs, Manifest& out);

}  // namespace kern::reader_detail
