// The manifest reader's diagnostic codes (E0001..E0099), one per kind of
// mistake, in one place. The catalogue (title + long explanation with a
// failing and a fixed example) feeds docs/diagnostics.md and `--explain`.
// Verifier codes (E0100 and up) live with the verifier.
#pragma once

#include <span>
#include <string_view>

namespace kern {

/// One entry of a diagnostics catalogue: the stable code, a one-line title
/// and a long explanation (markdown) with a failing and a fixed example.
struct DiagnosticCodeInfo {
  std::string_view code;
  std::string_view title;
  std::string_view explanation;
};

/// Codes reported by read_manifest (common/manifest_reader.h).
namespace reader_code {
inline constexpr const char* kJsonSyntax = "E0001";         ///< RapidJSON rejected the text
inline constexpr const char* kEmbeddedNul = "E0002";        ///< a NUL byte inside the file
inline constexpr const char* kTrailingCharacters = "E0003"; ///< text after the root value
inline constexpr const char* kDuplicateKey = "E0004";       ///< a key repeated in one object
inline constexpr const char* kUnknownField = "E0005";       ///< a field the schema does not define
inline constexpr const char* kWrongType = "E0006";          ///< wrong JSON type for a field
inline constexpr const char* kMissingField = "E0007";       ///< a required field is absent
inline constexpr const char* kOutOfRange = "E0008";         ///< a number outside its type's range
inline constexpr const char* kBadParamType = "E0009";       ///< malformed parameter-type string
inline constexpr const char* kUnknownDType = "E0010";       ///< unknown element type
inline constexpr const char* kUnknownBufferClass = "E0011"; ///< unknown buffer class
inline constexpr const char* kBadExpression = "E0012";      ///< not one of the four expression forms
inline constexpr const char* kWrongLength = "E0013";        ///< array with the wrong element count
inline constexpr const char* kBadArgTag = "E0014";          ///< tagged argument with zero or several tags
inline constexpr const char* kDomainConflict = "E0015";     ///< domain mixes min/max with index_into
}  // namespace reader_code

/// Every reader code in ascending order.
std::span<const DiagnosticCodeInfo> reader_code_catalogue();

/// The catalogue entry of `code`; nullptr when it is not a reader code.
const DiagnosticCodeInfo* find_reader_code(std::string_view code);

}  // namespace kern
