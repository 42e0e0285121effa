// NFC through ICU, restricted to HF's Unicode 9.0 normalization data (see
// normalizer.h).
#include "kern-run/tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>
#include <unicode/utypes.h>

namespace kern::tok {
namespace {

/// The Unicode version of HF tokenizers' normalization tables (its
/// unicode-normalization-alignments crate): combining marks added in 10.0 or
/// later are not reordered by HF (checked against tokenizers 0.22 with
/// U+1DF5 (9.0) vs U+1DF6 (10.0)).
constexpr uint8_t kHfNormalizationMajor = 9;

/// Whether code point `c` was assigned after HF's normalization tables.
bool newer_than_hf_tables(UChar32 c) {
  UVersionInfo age;
  u_charAge(c, age);
  return age[0] > kHfNormalizationMajor;
}

Status nfc_append(const icu::Normalizer2& nfc, std::string_view text, std::string& out) {
  UErrorCode status = U_ZERO_ERROR;
  icu::StringByteSink<std::string> sink(&out);
  nfc.normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink, nullptr,
                    status);
  if (U_FAILURE(status)) return make_error(ErrorKind::kUsage, std::string("nfc: icu: ") + u_errorName(status));
  return Status::ok_status();
}

}  // namespace

Status normalize(NormalizerKind kind, std::string_view text, std::string& out) {
  bool ascii = true;
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (kind == NormalizerKind::kNone || ascii) {
    out.append(text);
    return Status::ok_status();
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) {
    return make_error(ErrorKind::kUsage, std::string("nfc: icu: ") + u_errorName(status));
  }
  // HF's tables see a character newer than Unicode 9.0 as an unassigned
  // starter: it neither decomposes, composes nor reorders. Normalizing the
  // runs between such characters separately and copying them through gives
  // the same result, since Unicode's stability policy keeps the data of older
  // characters unchanged.
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t n = static_cast<int32_t>(text.size());
  int32_t run_start = 0;
  for (int32_t i = 0; i < n;) {
    const int32_t char_start = i;
    UChar32 c;
    U8_NEXT(p, i, n, c);
    if (c < 0x300 || !newer_than_hf_tables(c)) continue;
    KERN_RETURN_IF_ERROR(nfc_append(*nfc, text.substr(run_start, char_start - run_start), out));
    out.append(text.substr(char_start, i - char_start));
    run_start = i;
  }
  return nfc_append(*nfc, text.substr(run_start), out);
}

}  // namespace kern::tok
