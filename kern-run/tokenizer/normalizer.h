// Text normalizers of HF tokenizer.json that this library supports: none, or
// Unicode NFC (normalizer {"type": "NFC"}), done by ICU's Normalizer2 on UTF-8
// but as HF's Unicode 9.0 tables do it: characters assigned after 9.0 are
// left alone (no decomposition, composition or reordering around them).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace kern::tok {

enum class NormalizerKind { kNone, kNfc };

/// Appends `text` (valid UTF-8) normalized per `kind` to `out`. Pure ASCII
/// passes through untouched. Errors: ICU failures (out of memory), reported
/// with ICU's error name.
Status normalize(NormalizerKind kind, std::string_view text, std::string& out);

}  // namespace kern::tok
