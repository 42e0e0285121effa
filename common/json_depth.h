// kern's one bounded JSON reader for text from outside (request bodies of
// kern-run serve, the safetensors header, tokenizer.json): a nesting-depth
// pre-check, a linear scan that counts open arrays/objects outside strings,
// then RapidJSON's DOM parser, so that a text nested a million deep is an
// error instead of a stack overflow in the recursive parser, walker or
// destructor. The manifest and --requests reader (json_tree.cpp, a SAX
// reader keeping line:column positions) stops at the same kMaxJsonDepth.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kern {

/// The deepest nesting of arrays/objects kern accepts in a JSON file (the
/// same bound as the manifest reader; real files need fewer than 10).
inline constexpr size_t kMaxJsonDepth = 128;

/// The byte offset of the first '[' or '{' that opens level `max_depth` + 1
/// in `text`, or nullopt when the text never nests deeper than `max_depth`.
/// Strings (with backslash escapes) are skipped; the text need not be valid
/// JSON (the parser reports syntax errors). O(size), no allocation.
std::optional<size_t> json_too_deep_at(std::string_view text, size_t max_depth = kMaxJsonDepth);

/// Why parse_json_bounded refused a text.
struct JsonParseError {
  size_t offset = 0;  ///< byte offset into the text
  std::string message;  ///< "nesting deeper than 128 levels", or RapidJSON's English text
  bool too_deep = false;
};

/// Parses `text` (not NUL-terminated) into `doc` with RapidJSON `Flags`,
/// after json_too_deep_at with `max_depth`: nullopt on success, else where
/// and why it failed. Nothing past the text is read.
template <unsigned Flags = rapidjson::kParseDefaultFlags>
std::optional<JsonParseError> parse_json_bounded(std::string_view text, rapidjson::Document& doc,
                                                 size_t max_depth = kMaxJsonDepth) {
  if (auto at = json_too_deep_at(text, max_depth))
    return JsonParseError{*at, "arrays/objects nest deeper than " + std::to_string(max_depth) + " levels", true};
  doc.Parse<Flags>(text.data(), text.size());
  if (doc.HasParseError()) return JsonParseError{doc.GetErrorOffset(), rapidjson::GetParseError_En(doc.GetParseError())};
  return std::nullopt;
}

}  // namespace kern
