// UTF-8 validation and lossy decoding by maximal subparts (see utf8.h).
#include "kern-run/tokenizer/utf8.h"

namespace kern::tok {
namespace {

enum class SeqStatus { kValid, kInvalid, kIncomplete };

struct SeqResult {
  SeqStatus status;
  size_t len;  ///< kValid: sequence length; kInvalid: maximal subpart length
};

/// Classifies the sequence starting at p[0] (n >= 1 bytes available) with the
/// well-formed table of Unicode §3.9 (Table 3-7).
SeqResult classify(const unsigned char* p, size_t n) {
  const unsigned char b = p[0];
  if (b < 0x80) return {SeqStatus::kValid, 1};
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    need = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return {SeqStatus::kInvalid, 1};
  }
  for (size_t k = 1; k < need; ++k) {
    if (k >= n) return {SeqStatus::kIncomplete, k};
    const unsigned char c = p[k];
    const unsigned char l = k == 1 ? lo : 0x80;
    const unsigned char h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) return {SeqStatus::kInvalid, k};
  }
  return {SeqStatus::kValid, need};
}

}  // namespace

size_t find_invalid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const SeqResult r = classify(p + i, n - i);
    if (r.status != SeqStatus::kValid) return i;
    i += r.len;
  }
  return n;
}

void Utf8StreamDecoder::push(std::string_view bytes, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  // Complete (or break) the held-back sequence one byte at a time. It was a
  // valid incomplete prefix, so a failure is always at the newest byte: the
  // bytes before it are one maximal subpart and the newest byte starts over.
  while (pending_len_ > 0 && i < n) {
    pending_[pending_len_++] = static_cast<char>(p[i++]);
    const SeqResult r =
        classify(reinterpret_cast<const unsigned char*>(pending_), pending_len_);
    if (r.status == SeqStatus::kValid) {
      out.append(pending_, pending_len_);
      pending_len_ = 0;
    } else if (r.status == SeqStatus::kInvalid) {
      out.append(kReplacementChar);
      pending_len_ = 0;
      --i;
    }
  }
  while (i < n) {
    size_t ascii_end = i;
    while (ascii_end < n && p[ascii_end] < 0x80) ++ascii_end;
    out.append(bytes.data() + i, ascii_end - i);
    i = ascii_end;
    if (i >= n) break;
    const SeqResult r = classify(p + i, n - i);
    if (r.status == SeqStatus::kValid) {
      out.append(bytes.data() + i, r.len);
      i += r.len;
    } else if (r.status == SeqStatus::kInvalid) {
      out.append(kReplacementChar);
      i += r.len;
    } else {
      for (size_t k = i; k < n; ++k) pending_[pending_len_++] = bytes[k];
      i = n;
    }
  }
}

void Utf8StreamDecoder::finish(std::string& out) {
  if (pending_len_ > 0) out.append(kReplacementChar);
  pending_len_ = 0;
}

void append_utf8_lossy(std::string_view bytes, std::string& out) {
  Utf8StreamDecoder decoder;
  decoder.push(bytes, out);
  decoder.finish(out);
}

}  // namespace kern::tok
