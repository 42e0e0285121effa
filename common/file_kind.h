// Telling what a file given in a plan's place is (a JSON manifest, a
// safetensors weights file), from its first bytes, so that "not a plan"
// errors can say what to do next (issue 25). Used by kern-load's plan check
// and kern-verify --dump; neither trusts the guess for anything else.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kern {

/// What the first bytes of a file look like.
enum class FileKind {
  kOther,        ///< none of the below (a plan, or garbage)
  kJson,         ///< optional UTF-8 BOM and whitespace, then '{' or '['
  kSafetensors,  ///< an 8-byte little-endian header length, then '{'
};

/// Classifies `bytes` (any length) by their start only.
FileKind sniff_file_kind(std::span<const uint8_t> bytes);

/// The next step for a file of `kind` given where a plan was expected, as a
/// clause to append after "; " ("" for kOther). `path` is the file as given:
/// for JSON, "the file is JSON (a manifest?): compile it into a plan first:
/// kern-verify m.json -o m.kplan"; for safetensors, "the file is a
/// safetensors file (weights): give it with --weights, after the plan".
std::string not_a_plan_next_step(FileKind kind, std::string_view path);

}  // namespace kern
