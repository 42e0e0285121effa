// A small JSON tree where every value knows its byte span [begin, end) and
// its parent, from which its RFC 6901 pointer and the dotted subject path of
// messages are computed on demand (only diagnostics need them: building
// ~50k pointer strings for the Qwen3-4B manifest was a third of its read
// time). Built from a
// RapidJSON SAX parse over a MemoryStream (build-notes.md: StringStream's
// Tell() is stale inside callbacks). This layer reports only what JSON
// itself gets wrong (syntax, embedded NUL, trailing text, duplicate keys);
// the manifest schema is checked by manifest_reader.cpp on top of it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "common/source.h"

namespace kern {

struct JsonMember;

/// One parsed JSON value. Owns its children.
struct JsonValue {
  enum class Type : uint8_t { kNull, kBool, kInt, kUint, kDouble, kString, kArray, kObject };
  Type type = Type::kNull;
  bool bool_value = false;
  int64_t int_value = 0;     ///< kInt: a negative integer
  uint64_t uint_value = 0;   ///< kUint: a non-negative integer that fits u64
  double double_value = 0;   ///< kDouble, and the value of every number
  bool integral_text = false;  ///< kDouble written without '.'/exponent: an integer too large for 64 bits
  std::string string_value;  ///< kString (UTF-8, may not contain NUL: the reader rejects NUL)
  std::vector<JsonValue> items;     ///< kArray
  std::vector<JsonMember> members;  ///< kObject, in file order, duplicates included
  SourceSpan span;       ///< the value's bytes; span.pointer is left empty (json_pointer())
  const JsonValue* parent = nullptr;  ///< the enclosing array/object; nullptr at the root
  uint32_t index = 0;    ///< position in parent->items or parent->members

  /// The first member called `key` (duplicates are ignored); nullptr when absent.
  const JsonValue* find(std::string_view key) const;
  bool is_number() const { return type == Type::kInt || type == Type::kUint || type == Type::kDouble; }
};

/// An object member: key (with the span of the quoted key) and value.
struct JsonMember {
  std::string key;
  SourceSpan key_span;  ///< the quoted key (pointer empty; resolves to the value's pointer)
  JsonValue value;
  bool duplicate = false;  ///< an earlier member has the same key (reported E0004)
};

/// English name of a JSON value's type for messages ("a string", "an array").
std::string_view json_type_name(const JsonValue& v);

/// RFC 6901 pointer of `v` ("/kernels/gemm/impl/steps/0"; "" at the root).
std::string json_pointer(const JsonValue& v);

/// Dotted path of `v` for messages ("kernels.gemm.impl.steps[0]"; "" at the root).
std::string json_subject(const JsonValue& v);

/// The pointer of the value, or of the member whose quoted key, begins at
/// byte `offset` of the tree's file; nullopt when nothing begins there.
std::optional<std::string> json_pointer_at(const JsonValue& root, uint32_t offset);

/// Fills the empty JSON pointers of `diags` (primary spans and located
/// notes) from their begin offsets, looked up in `root`. Spans that start
/// no value or key keep "" (the document root, a syntax error position).
void resolve_pointers(std::vector<Diagnostic>& diags, const JsonValue& root);

/// Same, parsing `file` again; does nothing when no pointer is missing. For
/// diagnostics reported on the manifest model (the verifier's), whose spans
/// carry offsets only.
void resolve_pointers(DiagnosticEngine& diags, const SourceFile& file);

/// A copy of `diags` with their missing pointers filled from `file` (parsed
/// only when one is missing). The renderers print through this, so callers
/// need not remember resolve_pointers before printing.
std::vector<Diagnostic> with_pointers(const std::vector<Diagnostic>& diags, const SourceFile& file);

/// Parses `file` into a tree. Reports E0001 (syntax, at RapidJSON's offset),
/// E0002 (embedded NUL), E0003 (trailing text) and returns nullopt for them;
/// reports E0004 for each duplicate key (at the second key, with a note at
/// the first) and still returns the tree. Invalid UTF-8 is a syntax error.
/// Pointers of the diagnostics it reports are filled. The root lives on the
/// heap so that the children's parent links stay valid when the tree moves.
std::unique_ptr<JsonValue> parse_json_tree(const SourceFile& file, DiagnosticEngine& diags);

}  // namespace kern
