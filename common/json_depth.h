// A nesting-depth pre-check for JSON texts handed to RapidJSON's DOM parser
// (the safetensors header, tokenizer.json): a linear scan that counts open
// arrays/objects outside strings, so that a hostile file nested a million
// deep is an error instead of a stack overflow in a recursive parser or
// walker. The manifest reader has its own limit (json_tree.cpp).
#pragma once

#include <cstddef>
#include <optional>
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

}  // namespace kern
