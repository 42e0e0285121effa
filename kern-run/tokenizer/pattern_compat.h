// Rewrites a tokenizer.json split regex (written for Oniguruma, which HF
// tokenizers runs) so that PCRE2 matches the same characters:
//  - `\s` / `\S` become Oniguruma's Unicode whitespace set
//    [\t\n\x0B\f\r\x{85}\p{Z}] (PCRE2's own \s also has U+180E);
//  - `\p{X}` for a general category X (L, N, Lu, Nd, ...) also lists the
//    code points ICU's newer Unicode tables put in X but PCRE2's older tables
//    do not know (Debian 12: ICU 72 = Unicode 15.0, PCRE2 10.42 = Unicode
//    14.0; Oniguruma in HF tokenizers knows Unicode 15.0).
// Not rewritten (left to PCRE2): `\P{X}`, `\pX`, script properties. `\S`
// inside a character class has no spelling and is an error.
#pragma once

#include <string>
#include <string_view>

namespace kern::tok {

/// `pattern` rewritten as described above. On failure returns "" and sets
/// `*error` (e.g. "\S inside a character class is not supported").
std::string onig_compatible_pattern(std::string_view pattern, std::string* error);

/// PCRE2 class members ("\x{31350}-\x{323AF}...") for the code points of
/// general category `category` (e.g. "L") that were assigned after PCRE2's
/// Unicode version, per ICU; "" when there are none or `category` is unknown.
std::string newer_category_members(std::string_view category);

}  // namespace kern::tok
