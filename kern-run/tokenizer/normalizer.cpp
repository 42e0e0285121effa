// NFC through ICU (see normalizer.h).
#include "kern-run/tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/utypes.h>

namespace kern::tok {

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
  icu::StringByteSink<std::string> sink(&out);
  nfc->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink,
                     nullptr, status);
  if (U_FAILURE(status)) {
    return make_error(ErrorKind::kUsage, std::string("nfc: icu: ") + u_errorName(status));
  }
  return Status::ok_status();
}

}  // namespace kern::tok
